"""The HTTP server's page (issue 46) in headless Chromium, driven over the DevTools protocol: text
typed into the box, the button clicked with the mouse, and the <audio> element given a WAV it can
play (a RIFF file with samples, metadata loaded, a duration). Skips without Chromium (setup.sh
installs it), the websockets package, piper-tts, Starlette/uvicorn or the joe voice."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

pytest.importorskip("piper", reason="piper-tts is not installed")
pytest.importorskip("starlette", reason="Starlette is not installed")
pytest.importorskip("uvicorn", reason="uvicorn is not installed")
sync_client = pytest.importorskip("websockets.sync.client", reason="the websockets package is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import http_load  # noqa: E402

VOICE = os.environ.get("LOCKSTEP_VOICE", os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Page:
    """One tab of a headless Chromium, spoken to over its DevTools websocket."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=120))
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:60]}: {r['exceptionDetails']}")
        return r["result"].get("value")


@pytest.mark.skipif(not CHROMIUM, reason="no Chromium (apt install chromium; scripts/setup.sh does)")
@pytest.mark.skipif(not os.path.exists(VOICE), reason=f"no Piper voice at {VOICE}")
def test_the_page_speaks_what_is_typed_in_a_browser():
    proc, url = http_load.start_server(VOICE, "--threads", "2")
    profile = tempfile.mkdtemp(prefix="lockstep-chromium-")
    port = http_load.free_port()
    browser = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio",
                                "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={profile}",
                                f"--remote-debugging-port={port}", url + "/"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, target = time.monotonic() + 60, None
        while target is None:
            try:
                tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2))
                target = next((t for t in tabs if t.get("type") == "page" and t["url"].startswith(url)), None)
            except OSError:
                pass
            if target is None:
                assert time.monotonic() < deadline, "Chromium's DevTools endpoint did not come up"
                time.sleep(0.3)
        with sync_client.connect(target["webSocketDebuggerUrl"], max_size=None) as ws:
            page = Page(ws)
            # The tab may still show about:blank, or be mid-navigation (its context then goes away under
            # an evaluation): ask until the page's own button is there.
            deadline = time.monotonic() + 60
            while True:
                try:
                    if page.eval("!!document.getElementById('speak') && document.readyState === 'complete'"):
                        break
                except RuntimeError:
                    pass
                assert time.monotonic() < deadline, "the page did not load in Chromium within 60 s"
                time.sleep(0.2)
            # Type: focus the box, clear it, insert text as keystrokes would.
            page.eval("const t = document.getElementById('text'); t.focus(); t.select(); true")
            page.call("Input.insertText", text="Typed in a browser, spoken by lockstep.")
            assert page.eval("document.getElementById('text').value") == "Typed in a browser, spoken by lockstep."
            # Click the button with the mouse, at its centre.
            box = page.eval("(() => { const r = document.getElementById('speak').getBoundingClientRect();"
                            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
            for kind in ("mousePressed", "mouseReleased"):
                page.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
            result = page.eval("""new Promise((resolve, reject) => {
                const a = document.getElementById('audio'), t0 = Date.now();
                (function wait() {
                  if (a.src && a.readyState >= 1 && a.duration > 0) {
                    fetch(a.src).then(r => r.arrayBuffer()).then(b => resolve({
                      riff: String.fromCharCode(...new Uint8Array(b.slice(0, 4))), bytes: b.byteLength,
                      duration: a.duration, status: document.getElementById('status').textContent}));
                  } else if (Date.now() - t0 > 90000) {
                    reject('no playable audio after 90 s: ' + document.getElementById('status').textContent);
                  } else setTimeout(wait, 100);
                })(); })""")
        print(f"\npage: {result}")
        assert result["riff"] == "RIFF", result
        assert result["bytes"] > 44 + 22050, result  # over half a second of 16-bit samples
        assert 1.0 < result["duration"] < 10.0, result
    finally:
        browser.kill()
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)
        proc.terminate()
        proc.wait(timeout=30)
