"""Result objects of the tools: truthy when the sides agree (as Polygraphy's accuracy result is),
``print()``-able as a table, and ``to_json()``, ``to_markdown()``, ``to_html(path)``."""

from __future__ import annotations

import html
import json
import os
import tempfile
from typing import Any, Sequence


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if value == value else "nan"
    return "" if value is None else str(value)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[_cell(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    esc = lambda s: _cell(s).replace("|", "\\|")
    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_atomic(path: str, text: str) -> None:
    """Writes ``text`` under a temporary name in the same folder, then renames: never half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lockstep_", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class Result:
    """Base of every tool result. Subclasses set ``ok``, ``title``, ``summary``, ``headers``/``rows``
    (the table) and ``data`` (everything, JSON-ready)."""

    ok: bool = True
    title: str = "lockstep"
    summary: str = ""
    headers: Sequence[str] = ()
    rows: Sequence[Sequence[Any]] = ()
    data: dict = {}

    def __bool__(self) -> bool:
        return bool(self.ok)

    def __str__(self) -> str:
        table = text_table(self.headers, self.rows) if self.headers else ""
        return "\n".join(p for p in (table, self.summary) if p)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'PASS' if self.ok else 'FAIL'}: {self.summary}>"

    def to_dict(self) -> dict:
        return dict(self.data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def to_markdown(self) -> str:
        parts = [f"### {self.title}"]
        if self.headers:
            parts.append(markdown_table(self.headers, self.rows))
        if self.summary:
            parts.append(f"**{'PASS' if self.ok else 'FAIL'}**: {self.summary}")
        return "\n\n".join(parts) + "\n"

    def _html_page(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in r) + "</tr>" for r in self.rows)
        verdict = "PASS" if self.ok else "FAIL"
        return ("<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(self.title) +
                "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                "td,th{border:1px solid #ccc;padding:2px 6px;font-family:monospace}"
                ".FAIL{color:#b00}.PASS{color:#070}</style></head><body><h1>" + html.escape(self.title) +
                f"</h1><p class='{verdict}'><b>{verdict}</b>: " + html.escape(self.summary) +
                "</p><table><tr>" + head + "</tr>" + body + "</table></body></html>\n")

    def to_html(self, path: str | None = None) -> str:
        """The report as one self-contained HTML page; written atomically to ``path`` when given."""
        page = self._html_page()
        if path is not None:
            write_atomic(path, page)
        return page
