#!/bin/sh
# Regenerates the IDX fuzz seed corpus in tests/fuzz/corpus/ (committed; run from the repo root).
# Small valid label/image files, plain and gzip (gzip -n: no name or time, so output is stable),
# plus near-misses: cut headers and payloads, trailing bytes, wrong magic, a 2-image slice of the
# real training set when the Debian package is installed.
set -eu
out=tests/fuzz/corpus
mkdir -p "$out"
rm -f "$out"/*
w() { printf "$2" > "$out/$1"; }
w labels5        '\0\0\10\1\0\0\0\5\0\1\2\3\11'
w images2x3x4    '\0\0\10\3\0\0\0\2\0\0\0\3\0\0\0\4ABCDEFGHIJKLMNOPQRSTUVWX'
w images0        '\0\0\10\3\0\0\0\0\0\0\0\34\0\0\0\34'
w header-cut     '\0\0\10\3\0\0\0\2\0\0'
w payload-cut    '\0\0\10\3\0\0\0\2\0\0\0\3\0\0\0\4ABCDEFGHIJ'
w trailing       '\0\0\10\1\0\0\0\2\1\2\3'
w magic-float    '\0\0\15\3\0\0\0\1\0\0\0\1\0\0\0\1\0\0\0\0'
w magic-2d       '\0\0\10\2\0\0\0\1\0\0\0\1\7'
w huge-claim     '\0\0\10\3\377\377\377\377\0\0\0\34\0\0\0\34\1\2\3\4'
for f in labels5 images2x3x4 payload-cut trailing; do gzip -9 -n -c "$out/$f" > "$out/$f.gz"; done
sys=/usr/share/datasets/fashion-mnist
if [ -r "$sys/train-images-idx3-ubyte.gz" ]; then
    { printf '\0\0\10\3\0\0\0\2\0\0\0\34\0\0\0\34'
      gzip -dc "$sys/train-images-idx3-ubyte.gz" | dd bs=1 skip=16 count=1568 2>/dev/null; } |
        gzip -9 -n -c > "$out/fashion-2-images.gz"
    { printf '\0\0\10\1\0\0\0\2'
      gzip -dc "$sys/train-labels-idx1-ubyte.gz" | dd bs=1 skip=8 count=2 2>/dev/null; } \
        > "$out/fashion-2-labels"
fi
ls "$out" | wc -l | sed 's/$/ seed files/'
