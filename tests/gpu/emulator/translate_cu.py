#!/usr/bin/env python3
"""Rewrites a .cu file as host C++ for the GPU emulator (emulator.h): each
launch `kernel<<<config>>>(args);` becomes
`emu_launch(emu_config(config), kernel, args);` (device_code.h).

Usage: translate_cu.py IN.cu OUT.cc"""
import re
import sys

LAUNCH = re.compile(r'([A-Za-z_]\w*(?:<[^<>;()]*>)?)\s*<<<(.*?)>>>\s*\((.*?)\)\s*;', re.S)


def launch(match):
    kernel, config, args = match.group(1), match.group(2), match.group(3).strip()
    return 'emu_launch(emu_config(%s), %s%s);' % (config, kernel, ', ' + args if args else '')


def main():
    source_path, out_path = sys.argv[1], sys.argv[2]
    with open(source_path) as f:
        source = f.read()
    out = LAUNCH.sub(launch, source)
    if '<<<' in out:
        sys.exit('translate_cu.py: %s: a launch this script cannot read' % source_path)
    with open(out_path, 'w') as f:
        f.write('#line 1 "%s"\n' % source_path + out)


if __name__ == '__main__':
    main()
