#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The source layout's rules (docs/design.md, "Source layout"), read from
the built libraries with nm:

- vmmpure makes no ioctl and calls nothing that only vmmkvm defines;
- every symbol a module exports begins with its module's name (module =
  NAME.c and NAME.h; NAME_kvm.c is NAME's ioctl half), or is one of the
  exceptions docs/design.md lists;
- no static symbol carries another module's prefix;
- nothing calls getenv: how the host behaves comes from the probes and
  the command line (profile.c), never from a test's environment.

Usage: check.py NM LIBVMMPURE LIBVMMKVM. Prints each breach; exit 1 if any.
"""
import os
import re
import subprocess
import sys

# docs/design.md: log.h reads like printf; kvm.h's error-returning forms.
EXCEPTIONS = {
    'log': ('info', 'warn', 'errmsg', 'die'),
    'kvm': ('__kvm',),
}


def symbols(nm, lib):
    """(object, kind, name) for every global symbol of lib."""
    out = subprocess.run([nm, '-A', lib], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        m = re.match(r'^(.*?):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$', line)
        if m:
            yield m.group(1).rsplit(':', 1)[-1], m.group(2), m.group(3)


def module_of(obj):
    """src_vmm_vm_kvm.c.o -> vm; src_vmm_emulate.c.o -> emulate."""
    name = os.path.basename(obj)
    name = re.sub(r'\.c\.o$|\.o$', '', name)
    name = re.sub(r'^src_vmm_', '', name)
    return re.sub(r'_kvm$', '', name)


def prefixed(name, module):
    allowed = (module,) + EXCEPTIONS.get(module, ())
    return any(name == p or name.startswith(p + '_') or
               (p.startswith('__') and name.startswith(p)) for p in allowed)


def main():
    nm, pure, kvm = sys.argv[1:4]
    breaches = []
    syms = {lib: list(symbols(nm, lib)) for lib in (pure, kvm)}
    kvm_only = {n for _, k, n in syms[kvm] if k.isupper() and k not in 'UVW'}
    modules = {module_of(o) for lib in syms for o, _, _ in syms[lib]}
    for lib in (pure, kvm):
        for obj, kind, name in syms[lib]:
            if kind == 'U':
                if name in ('getenv', 'secure_getenv'):
                    breaches.append(f'{obj}: calls {name}; a test takes a host\'s path with --host-quirks')
                if lib == pure and (name == 'ioctl' or name in kvm_only):
                    breaches.append(f'{obj}: vmmpure uses {name}, which only the KVM side may')
                continue
            if kind.islower():
                # Compiler-made locals: name.isra.0, __func__.1, CSWTCH.3.
                base = name.split('.')[0]
                other = [m for m in modules - {module_of(obj)}
                         if base == m or base.startswith(m + '_') or base in EXCEPTIONS.get(m, ())]
                if '.' not in name or name.split('.')[1] in ('isra', 'part', 'constprop', 'cold'):
                    if other:
                        breaches.append(f'{obj}: static {base} carries the prefix of module {other[0]}')
                continue
            if not prefixed(name, module_of(obj)):
                breaches.append(f'{obj}: exports {name}, which lacks the prefix {module_of(obj)}_')
    for b in breaches:
        print(b)
    print(f'conventions: {len(breaches)} breach(es)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main())
