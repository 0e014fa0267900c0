#!/usr/bin/env python3
"""A Linux guest to boot with vmm: Debian's kernel and an initramfs of
busybox-static and the project's split-lock program (splitlock.c).

  linuxguest.py kernel                      download Debian's kernel package
                                            (cached, as the lab does); print
                                            the vmlinuz path
  linuxguest.py initramfs [--build DIR] OUT write OUT: a newc cpio, gzip,
                                            with /init (init.sh), busybox and
                                            DIR/tests/linux/splitlock

Exit status: 0, 77 when the kernel or busybox cannot be had here (the
reason is printed), 1 on another error.

Then: vmm -c 2 --initrd OUT --append 'console=ttyS0' VMLINUZ
"""
import argparse
import gzip
import io
import os
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))
import debian  # noqa: E402
from debian import Unavailable  # noqa: E402,F401

BUSYBOX = "/bin/busybox"          # from Debian's busybox-static (scripts/setup.sh)


def vmlinuz():
    """The path of Debian's kernel (downloaded once, then cached)."""
    kroot = debian.fetch_kernel()
    boot = os.path.join(kroot, "boot")
    found = sorted(f for f in os.listdir(boot) if f.startswith("vmlinuz-"))
    if not found:
        raise Unavailable(f"no boot/vmlinuz-* in {kroot}")
    return os.path.join(boot, found[-1])


class Newc:
    """A newc ("070701") cpio archive written to a file object: entries
    owned by root, mtime 0, so that the same inputs give the same bytes."""

    def __init__(self, f):
        self.f, self.ino = f, 0

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        self.ino += 1
        name_b = name.encode() + b"\0"
        fields = (self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1],
                  len(name_b), 0)
        hdr = b"070701" + b"".join(b"%08X" % v for v in fields)
        self.f.write(hdr + name_b + b"\0" * (-(len(hdr) + len(name_b)) % 4))
        self.f.write(data + b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o755):
        self._entry(name, stat.S_IFREG | mode, data)

    def chardev(self, name, major, minor, mode=0o600):
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def close(self):
        self._entry("TRAILER!!!", 0)


def is_static(path):
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    return r.returncode != 0 or "not a dynamic executable" in (r.stdout + r.stderr)


def initramfs(build, out):
    """Writes the initramfs to out (see the module's text)."""
    program = os.path.join(build, "tests", "linux", "splitlock")
    if not os.path.exists(BUSYBOX) or not is_static(BUSYBOX):
        raise Unavailable(f"{BUSYBOX} is missing or not static: apt-get install busybox-static")
    if not os.path.exists(program):
        raise FileNotFoundError(f"{program} is missing: build first (meson compile -C {build})")
    for p in (program,):
        if not is_static(p):
            raise ValueError(f"{p} is not static: the initramfs has no libc")
    buf = io.BytesIO()
    a = Newc(buf)
    for d in ("bin", "dev", "proc", "sys", "tmp"):
        a.dir(d)
    a.chardev("dev/console", 5, 1)
    with open(os.path.join(HERE, "init.sh"), "rb") as f:
        a.file("init", f.read())
    for src, dest in ((BUSYBOX, "bin/busybox"), (program, "bin/splitlock")):
        with open(src, "rb") as f:
            a.file(dest, f.read())
    a.close()
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(gzip.compress(buf.getvalue(), compresslevel=6, mtime=0))
    os.replace(tmp, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("kernel")
    i = sub.add_parser("initramfs")
    i.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="the build dir with tests/linux/splitlock (default: build/)")
    i.add_argument("out")
    a = ap.parse_args()
    try:
        print(vmlinuz() if a.cmd == "kernel" else initramfs(a.build, a.out))
    except Unavailable as e:
        print(f"linuxguest: cannot be had here: {e}", file=sys.stderr)
        return 77
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"linuxguest: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
