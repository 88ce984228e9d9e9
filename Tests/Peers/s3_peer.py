#!/usr/bin/env python3
"""An independent S3 client (boto3) for recbot's upload tests: it makes buckets and reads back
what recbot uploaded, so a signing or checksum mistake on recbot's side cannot hide behind the
same mistake in the reader.

  s3_peer.py ENDPOINT probe                        exits 0 once the server answers
  s3_peer.py ENDPOINT create-bucket BUCKET
  s3_peer.py ENDPOINT list BUCKET PREFIX           JSON: [{key, size, etag}]
  s3_peer.py ENDPOINT get BUCKET KEY OUTFILE
  s3_peer.py ENDPOINT uploads BUCKET PREFIX        JSON: unfinished multipart uploads [{key, upload_id}]
Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
"""
import json
import os
import sys

import boto3
from botocore.config import Config


def client(endpoint):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"], aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}),
    )


def main(argv):
    endpoint, command, *rest = argv
    s3 = client(endpoint)
    if command == "probe":
        s3.list_buckets()
    elif command == "create-bucket":
        s3.create_bucket(Bucket=rest[0])
    elif command == "list":
        bucket, prefix = rest
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        items = [{"key": o["Key"], "size": o["Size"], "etag": o["ETag"].strip('"')} for page in pages for o in page.get("Contents", [])]
        print(json.dumps(items))
    elif command == "get":
        bucket, key, out = rest
        s3.download_file(bucket, key, out)
    elif command == "uploads":
        answer = s3.list_multipart_uploads(Bucket=rest[0], Prefix=rest[1])
        print(json.dumps([{"key": u["Key"], "upload_id": u["UploadId"]} for u in answer.get("Uploads", [])]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
