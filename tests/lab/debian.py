"""The Debian kernel package that the lab boots and the Linux guest tests
(tests/linux/) boot in turn: found with apt-cache, downloaded with apt-get
download, unpacked with dpkg -x (never installed), cached under
${VMM_LAB_CACHE:-${XDG_CACHE_HOME:-~/.cache}/vmm-lab}/kernels/ (tests/lab/README.md).
"""
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def log(msg):
    print("lab: " + msg, file=sys.stderr, flush=True)


class Unavailable(Exception):
    """The lab cannot be had on this machine: the test skips with this reason."""


def cache_dir():
    d = os.environ.get("VMM_LAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vmm-lab")
    os.makedirs(d, exist_ok=True)
    return d


class Lock:
    """flock on a file in the cache: one download, and one QEMU, at a time."""

    def __init__(self, name, what):
        self.path = os.path.join(cache_dir(), name)
        self.what = what

    def __enter__(self):
        self.f = open(self.path, "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another lab run ({self.what}, lock {self.path})")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *a):
        self.f.close()


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                       capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def apt_depends(pkg):
    r = subprocess.run(["apt-cache", "depends", pkg], capture_output=True, text=True)
    return re.findall(r"^\s+Depends: (\S+)", r.stdout, re.M)


def apt_has(pkg):
    r = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() != ""


def kernel_package():
    """linux-image-VER-amd64-unsigned for the VER that the meta-package
    (linux-image-amd64 unless VMM_LAB_KERNEL_META says otherwise) names today."""
    meta = os.environ.get("VMM_LAB_KERNEL_META", "linux-image-amd64")
    deps = [d for d in apt_depends(meta) if d.startswith("linux-image-")]
    if not deps and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        deps = [d for d in apt_depends(meta) if d.startswith("linux-image-")]
    if not deps:
        return None
    image = deps[0]
    # The signed image and the unsigned one hold the same kernel; QEMU does no
    # Secure Boot, and the unsigned package needs no signing shim.
    return image + "-unsigned" if apt_has(image + "-unsigned") else image


def fetch_kernel():
    """Returns the directory the kernel package is unpacked in (cached)."""
    kdir = os.path.join(cache_dir(), "kernels")
    os.makedirs(kdir, exist_ok=True)
    pkg = kernel_package()
    with Lock("fetch.lock", "kernel download"):
        if pkg is None:
            # No apt metadata (not root, no network): use what an earlier
            # fetch unpacked, if anything.
            done = sorted(glob.glob(os.path.join(kdir, "*", ".done")))
            if done:
                return os.path.dirname(done[-1])
            raise Unavailable("cannot find the kernel package: `apt-cache depends "
                              + os.environ.get("VMM_LAB_KERNEL_META", "linux-image-amd64")
                              + "` names no linux-image (run apt-get update)")
        r = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                           capture_output=True, text=True)
        ver = re.search(r"^Version: (\S+)", r.stdout, re.M).group(1)
        dest = os.path.join(kdir, f"{pkg}_{ver}")
        if os.path.exists(os.path.join(dest, ".done")):
            return dest
        log(f"fetching {pkg} {ver} from the Debian archive into {kdir}")
        with tempfile.TemporaryDirectory(dir=kdir) as tmp:
            os.chmod(tmp, 0o755)
            r = subprocess.run(["apt-get", "download", f"{pkg}={ver}"], cwd=tmp,
                               capture_output=True, text=True)
            debs = glob.glob(os.path.join(tmp, "*.deb"))
            if r.returncode != 0 or not debs:
                raise Unavailable(f"apt-get download {pkg} failed: "
                                  + (r.stderr.strip().splitlines() or ["?"])[-1])
            shutil.rmtree(dest, ignore_errors=True)
            subprocess.run(["dpkg", "-x", debs[0], dest], check=True)
        open(os.path.join(dest, ".done"), "w").close()
        return dest
