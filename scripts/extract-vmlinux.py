#!/usr/bin/env python3
# extract-vmlinux.py BZIMAGE OUT: the ELF vmlinux inside a bzImage (XZ
# payload on 5.10/6.1, ZSTD on 6.12 and later), for the lab's QEMU -kernel.
# Used by scripts/fetch-kernels.sh and scripts/fetch-chroot-kernels.sh.
import lzma, subprocess, sys
data = open(sys.argv[1], 'rb').read()
def unxz(b):
    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(b)
def unzstd(b):
    return subprocess.run(['zstd', '-dqc'], input=b, capture_output=True).stdout
for magic, fn in ((b'\xfd7zXZ\x00', unxz), (b'\x28\xb5\x2f\xfd', unzstd)):
    at = data.find(magic)
    while at >= 0:
        try:
            out = fn(data[at:])
        except Exception:
            out = b''
        if out[:4] == b'\x7fELF':
            open(sys.argv[2], 'wb').write(out)
            sys.exit(0)
        at = data.find(magic, at + 1)
sys.exit('no XZ or ZSTD ELF payload in ' + sys.argv[1])
