#!/usr/bin/env python3
"""An installed vmm, moved elsewhere, still finds its self-test guest.

  install_test.py --vmm build/vmm BUILD_DIR

Lays out vmm and guest.bin where `meson install` puts them (as `meson
introspect --installed` says), under a prefix that is then renamed, as a
`meson install --destdir` tree or a package unpacked elsewhere would be;
`vmm --self-test` from there must boot that guest to a complete, passing
TAP run. Exits 0, 1 with what failed, 77 without a KVM.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import Failure, case_main, run, scaled, tap_failures  # noqa: E402


def installed(build):
    r = subprocess.run(["meson", "introspect", "--installed", build],
                       stdout=subprocess.PIPE, text=True, check=True)
    where = {os.path.basename(k): v for k, v in json.loads(r.stdout).items()}
    if "vmm" not in where or "guest.bin" not in where:
        raise Failure(f"meson installs no vmm or guest.bin here: {sorted(where)}")
    return where


def relocated(ctx, build):
    where = installed(build)
    prefix = os.path.commonpath([where["vmm"], where["guest.bin"]])
    staged, moved = os.path.join(ctx.tmp, "staged"), os.path.join(ctx.tmp, "moved")
    for name, src in (("vmm", ctx.vmm), ("guest.bin", os.path.join(build, "guest.bin"))):
        dst = staged + os.path.join("/", os.path.relpath(where[name], prefix))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    os.rename(staged, moved)
    vmm = moved + os.path.join("/", os.path.relpath(where["vmm"], prefix))
    r = run([vmm, "-q", "--self-test", "--timeout", str(scaled(60))], timeout=scaled(120))
    print(r.out[-2000:] + "--- stderr ---\n" + r.err)
    fails, _ = tap_failures(r.out)
    if r.status != 0:
        fails.append(f"{vmm} --self-test: exit status {r.status}, expected 0")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"relocated": relocated}, __doc__))
