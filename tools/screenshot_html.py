"""A PNG of an HTML report, as headless Chromium draws it (the screenshots under docs/img/).

    twin run grpo-8b-disaggregated --no-noise --gpu-hour-price 2.5 --html run.html
    python tools/screenshot_html.py run.html docs/img/twin-run-html.png 4200
    twin scale grpo-8b-disaggregated --gpus 16,32,64,128,256 --html scale.html
    python tools/screenshot_html.py scale.html docs/img/twin-scale-html.png 2000

The page opens with the network unreachable; any console message fails the shot. The window is
1100 px wide and HEIGHT tall; the blank below the page is cropped, and the colours reduced to a
palette of 128 (the charts use a few) to keep the file small. Needs chromium and Pillow (which
matplotlib brings).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image, ImageChops


def main(argv: list[str]) -> int:
    page, out = Path(argv[0]).resolve(), Path(argv[1])
    height = int(argv[2]) if len(argv) > 2 else 3000
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
                           f"--window-size=1100,{height}", f"--screenshot={out}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    if done.returncode or console:
        print("\n".join(console) or done.stderr[-2000:], file=sys.stderr)
        return 1
    im = Image.open(out).convert("RGB")
    box = ImageChops.difference(im, Image.new("RGB", im.size, (255, 255, 255))).getbbox()
    im = im.crop((0, 0, im.size[0], min(im.size[1], box[3] + 24)))
    im.quantize(colors=128).save(out, optimize=True)
    print(f"wrote {out} ({im.size[0]}x{im.size[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
