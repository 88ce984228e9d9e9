#!/usr/bin/env python3
"""Reads recbot's Prometheus metrics the way a scraper does, with prometheus_client's parser
(an independent reader of the text format), and prints what it found as JSON:

  scrape_metrics.py --url http://127.0.0.1:PORT     GET /metrics (and /nope, which must be 404)
  scrape_metrics.py --file recbot.prom              a node_exporter textfile

{"status": 200, "content_type": "...", "not_found_status": 404,
 "types": {"recbot_bytes_written": "counter", ...},
 "samples": {"recbot_ice_state{channel=\"sora\",state=\"connected\"}": 1.0, ...}}
A line the parser rejects makes it exit non-zero with the parser's message.
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode("utf-8", "replace")


def parse(text):
    if text and not text.endswith("\n"):
        raise ValueError("the text does not end with a newline")
    types, samples = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            if sample.timestamp is not None:
                raise ValueError(f"{sample.name} carries a timestamp (the textfile collector refuses them)")
            labels = ",".join(f'{key}="{value}"' for key, value in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return types, samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--file")
    args = parser.parse_args()
    result = {}
    if args.url:
        status, content_type, text = fetch(args.url.rstrip("/") + "/metrics")
        result.update(status=status, content_type=content_type)
        result["not_found_status"] = fetch(args.url.rstrip("/") + "/nope")[0]
    else:
        with open(args.file, encoding="utf-8") as handle:
            text = handle.read()
    try:
        result["types"], result["samples"] = parse(text)
    except Exception as error:  # the parser's own message is the useful part
        print(f"scrape_metrics: unparsable metrics: {error}", file=sys.stderr)
        sys.exit(1)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
