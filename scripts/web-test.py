#!/usr/bin/env python3
"""The calculator's page (target/web/, built by scripts/web.sh) in a real headless Chromium.

Drives Debian's chromium through chromedriver over the W3C WebDriver protocol (plain HTTP and
JSON: the standard library only). For each case it types an expression into the page's text box,
reads the result line, and checks the picture: an <svg> with the expected number of cells and a
non-empty bounding box, and a screenshot (PNG, decoded here) holding the color of a known cell.

Prints one line per case and a closing `test result:` line in cargo's format (CI adds them up).
Without chromium or chromedriver it skips with a message, or fails when TESSEL_REQUIRE_BROWSER=1.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "target", "web", "index.html")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def hue(h):
    """tessel_calc::svg::hue: the fill of a cell, as (r, g, b)."""
    s, l = 0.6, 0.78
    c = (1 - abs(2 * l - 1)) * s
    hp = (h % 360) / 60
    x = c * (1 - abs(hp % 2 - 1))
    r, g, b = [(c, x, 0), (x, c, 0), (0, c, x), (0, x, c), (x, 0, c), (c, 0, x)][min(int(hp), 5)]
    m = l - c / 2
    return tuple(int((v + m) * 255 + 0.5) for v in (r, g, b))


# (expression typed, expected result line or its start, cells drawn, a cell's label and the color
# its rectangle must have on the screen)
CASES = [
    ("(4,8):(8,1)", "(4,8):(8,1)", 32, ("21", hue(300 * 21 / 32))),
    ("composition((6,2):(8,2),(4,3):(3,1))", "((2,2),3):((24,2),8)", 12, ("26", hue(300 * 26 / 43))),
    ("make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN)", "TiledMMA(SM80_16x8x16_F32F16F16F32_TN", 512,
     ("T5 V0", hue(5 * 137.507764))),
    ("composition(", "error: ", 0, None),
]


def png_pixels(data):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"PNG depth {depth}, color type {ctype}"
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp : x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


class Driver:
    """A chromedriver process and one headless Chromium session."""

    def __init__(self, chromium, chromedriver):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([chromedriver, f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                if self.req("GET", "/status")["ready"]:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--force-color-profile=srgb"],
        }}}}
        self.sid = self.req("POST", "/session", caps)["sessionId"]

    def req(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=60) as resp:
            return json.loads(resp.read())["value"]

    def s(self, method, path, body=None):
        return self.req(method, f"/session/{self.sid}{path}", body)

    def script(self, js):
        return self.s("POST", "/execute/sync", {"script": js, "args": []})

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def close(self):
        try:
            self.s("DELETE", "")
        finally:
            self.proc.terminate()


def wait(f, what, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        v = f()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def run_case(d, expr, want, cells, cell):
    box = d.find("#expr")
    d.s("POST", f"/element/{box}/clear", {})
    d.script("document.getElementById('result').textContent = ''")
    d.s("POST", f"/element/{box}/value", {"text": expr + "\ue007"})  # the keys, then Enter
    result = d.find("#result")
    got = wait(lambda: d.s("GET", f"/element/{result}/text"), "the result line")
    assert got.startswith(want) if want.endswith((" ", "_TN")) else got == want, f"result {got!r}, want {want!r}"
    info = d.script("""const s = document.querySelector('#picture svg');
        if (!s) return null;
        const b = s.getBBox();
        return [s.querySelectorAll('rect').length, b.width, b.height];""")
    if cells == 0:
        assert info is None, f"an error drew a picture: {info}"
        return "no picture"
    assert info is not None, "no <svg> in the page"
    rects, w, h = info
    # the cells, the background and the empty cells no thread holds
    assert rects >= cells + 1, f"{rects} rectangles for {cells} cells"
    assert w > 100 and h > 50, f"the picture's box is {w}x{h}"
    # where the cell labeled `label` is on the screen, and its color in a screenshot
    label, color = cell
    d.script("document.getElementById('picture').scrollIntoView()")
    box = d.script("""const t = [...document.querySelectorAll('#picture svg text')]
            .find((e) => !e.getAttribute('class') && e.textContent === %s);
        if (!t) return null;
        const r = t.previousElementSibling.getBoundingClientRect();
        return [r.x, r.y, r.width, r.height, window.devicePixelRatio];""" % json.dumps(label))
    assert box is not None, f"no cell labeled {label!r}"
    x, y, bw, bh, dpr = box
    png = base64.b64decode(d.s("GET", "/screenshot"))
    pw, ph, rows = png_pixels(png)
    px, py = int((x + 3) * dpr), int((y + 3) * dpr)
    assert 0 <= px < pw and 0 <= py < ph, f"cell {label!r} at ({px},{py}) is off the {pw}x{ph} screenshot"
    got = rows[py][px]
    assert all(abs(a - b) <= 2 for a, b in zip(got, color)), f"cell {label!r} is {got} on the screen, want {color}"
    return f"{rects - 1} cells, {w:.0f}x{h:.0f} px; cell {label!r} at ({px},{py}) is {got}"


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        msg = "scripts/web-test.py: needs chromium and chromedriver (Debian: apt-get install chromium chromium-driver)"
        if os.environ.get("TESSEL_REQUIRE_BROWSER") == "1":
            print(msg + "; TESSEL_REQUIRE_BROWSER=1: failing", file=sys.stderr)
            return 1
        print(msg + ": SKIPPED")
        return 0
    if not os.path.exists(PAGE):
        print(f"scripts/web-test.py: {PAGE} is missing: run scripts/web.sh first", file=sys.stderr)
        return 1
    d = Driver(chromium, chromedriver)
    passed = failed = 0
    try:
        d.s("POST", "/url", {"url": "file://" + PAGE})
        wait(lambda: d.script("return window.tesselReady === true"), "the wasm module")
        for expr, want, cells, color in CASES:
            try:
                how = run_case(d, expr, want, cells, color)
                print(f"web {expr}: ok ({how})")
                passed += 1
            except AssertionError as e:
                print(f"web {expr}: FAILED: {e}")
                failed += 1
    finally:
        d.close()
    status = "ok" if failed == 0 else "FAILED"
    print(f"test result: {status}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
