// The HTML report in a real browser: Debian's headless Chromium renders it to a PNG (non-trivial
// size, more than one colour) and dumps the DOM after layout (the SVG plot has a laid-out size,
// one table row per node). Skips, saying so, when chromium is not installed.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "bisect_support.h"
#include "core/atomic_file.h"
#include "diff/bisect.h"
#include "diff/report.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMinScreenshotBytes = 20 * 1024;
constexpr int kMinDistinctColours = 8;

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

int sh(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Distinct RGB(A) colours of a PNG, decoded by python3's zlib (8-bit, non-interlaced; chromium's).
int distinct_colours(const std::string& png, const std::string& dir) {
  const std::string script = dir + "/colours.py";
  write_file_atomic(script, R"PY(
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4}[ctype]
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, w, 2):
            colours.add(bytes(line[x * bpp:x * bpp + 3]))
    prev = line
print(len(colours))
)PY");
  const std::string out = dir + "/colours.txt";
  if (sh("python3 " + script + " " + png + " >" + out + " 2>&1") != 0) return -1;
  return std::atoi(read_file(out).c_str());
}

TEST(ReportHtml, RendersInHeadlessChromium) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  const ir::Graph& g = bisector.graph();
  const int k = static_cast<int>(g.nodes.size()) / 3;
  diff::FaultSpec fault{g.nodes[static_cast<size_t>(k)].result_onnx_name(), diff::FaultKind::Scale, 1.5};
  diff::BisectReport report = bisector.run("cpu", &fault, diff::LocalMode::Divergent);
  ASSERT_EQ(report.first_divergent, k);
  const std::string html = diff::format_html(report);

  // The page itself: self-contained, one row per kernel boundary, the divergent one marked.
  std::regex row_re("<tr class=\"node[^\"]*\" id=\"node-");
  auto rows = std::distance(std::sregex_iterator(html.begin(), html.end(), row_re), std::sregex_iterator());
  EXPECT_EQ(rows, static_cast<long>(g.nodes.size()));
  EXPECT_NE(html.find("<tr class=\"node divergent\" id=\"node-" + std::to_string(k + 1) + "\">"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);

  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium): browser check skipped";
  const std::string dir = test::temp_dir() + "/html_report";
  fs::create_directories(dir);
  const std::string page = dir + "/report.html", png = dir + "/report.png", dom = dir + "/dom.html";
  write_file_atomic(page, html);
  const std::string common = "timeout 120 " + browser + " --headless --no-sandbox --disable-gpu --user-data-dir=" + dir +
                             "/profile --window-size=1200,900 ";
  ASSERT_EQ(sh(common + "--screenshot=" + png + " file://" + page + " >" + dir + "/shot.log 2>&1"), 0)
      << read_file(dir + "/shot.log");
  ASSERT_TRUE(fs::exists(png)) << read_file(dir + "/shot.log");
  EXPECT_GT(fs::file_size(png), kMinScreenshotBytes);
  EXPECT_GE(distinct_colours(png, dir), kMinDistinctColours);

  ASSERT_EQ(sh(common + "--dump-dom file://" + page + " >" + dom + " 2>" + dir + "/dom.log"), 0) << read_file(dir + "/dom.log");
  const std::string dumped = read_file(dom);
  std::smatch bbox;
  ASSERT_TRUE(std::regex_search(dumped, bbox, std::regex("data-plot-bbox=\"(\\d+)x(\\d+)\"")))
      << "the plot was not laid out: " << dumped.substr(0, 400);
  EXPECT_GT(std::stoi(bbox[1]), 500);  // the error line spans the plot's width
  EXPECT_GT(std::stoi(bbox[2]), 10);
  auto dom_rows = std::distance(std::sregex_iterator(dumped.begin(), dumped.end(), row_re), std::sregex_iterator());
  EXPECT_EQ(dom_rows, static_cast<long>(g.nodes.size()));
  EXPECT_NE(dumped.find("id=\"divergent-marker\""), std::string::npos);
}

}  // namespace
}  // namespace lockstep
