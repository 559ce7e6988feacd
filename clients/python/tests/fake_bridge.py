#!/usr/bin/env python3
"""A bridge that speaks protocol 2, for the refusal test."""
import json
import sys

for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "ok": True, "result": {"protocol": 2, "version": "fake", "pid": 1}}), flush=True)
