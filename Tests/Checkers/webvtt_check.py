#!/usr/bin/env python3
"""Reads a WebVTT file with webvtt-py, an independent parser, and prints its cues as JSON.

  webvtt_check.py FILE -> [{"start_ms", "end_ms", "voice", "text"}, ...]

Exits 1 (with the parser's message) when the file is not valid WebVTT.
"""
import json
import sys

import webvtt


def milliseconds(stamp):
    hours, minutes, seconds = stamp.split(":")
    whole, _, fraction = seconds.partition(".")
    return ((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1000 + int(fraction.ljust(3, "0")[:3])


def main():
    try:
        captions = webvtt.read(sys.argv[1])
    except Exception as error:  # the parser's own error types vary by version
        print(f"webvtt_check: {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    cues = [{"start_ms": milliseconds(c.start), "end_ms": milliseconds(c.end), "voice": c.voice, "text": c.text} for c in captions]
    print(json.dumps(cues, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
