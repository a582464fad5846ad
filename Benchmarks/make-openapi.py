#!/usr/bin/env python3
"""Writes a generated API description of about SIZE MB with OPERATIONS operations (issue 42's
benchmark: GitHub's REST description is 12.8 MB with ~1,000 operations): long descriptions,
shared component schemas referred to by $ref, inline reply schemas with examples.
Usage: make-openapi.py OUT [OPERATIONS] [SIZE_MB]"""
import json, sys

out = sys.argv[1]
operations = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
size_mb = float(sys.argv[3]) if len(sys.argv) > 3 else 10
words = "the quick brown fox jumps over the lazy dog while the api returns a paged list of things".split()

def text(n, seed):
    return " ".join(words[(seed + i) % len(words)] for i in range(n))

schemas = {}
for s in range(300):
    schemas["Thing%d" % s] = {
        "type": "object", "required": ["id", "name"],
        "properties": {("field_%d" % p): {"type": ["string", "integer", "boolean"][p % 3], "description": text(40, s + p),
                                          "maxLength": 200} if p % 3 == 0 else
                       {"type": ["string", "integer", "boolean"][p % 3], "description": text(40, s + p)}
                       for p in range(30)} | {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 80},
                                              "parent": {"$ref": "#/components/schemas/Thing%d" % s}},
    }
paths = {}
filler = max(0, int((size_mb * 1e6 - 3.2e6) / operations))
for o in range(operations // 2):
    tag = "group%d" % (o % 40)
    reply = {"type": "array", "items": {"$ref": "#/components/schemas/Thing%d" % (o % 300)},
             "example": [{"id": i, "name": text(6, i), "note": text(30, o)} for i in range(max(1, filler // 220))]}
    paths["/repos/{owner}/{repo}/things%d" % o] = {
        "parameters": [{"name": "owner", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}}],
        "get": {"operationId": "things%d/list" % o, "tags": [tag], "summary": "List things %d" % o,
                "description": text(120, o),
                "parameters": [{"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 30}},
                               {"name": "page", "in": "query", "schema": {"type": "integer", "default": 1}},
                               {"name": "state", "in": "query", "schema": {"type": "string", "enum": ["open", "closed", "all"]}}],
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": reply}}}}},
        "post": {"operationId": "things%d/create" % o, "tags": [tag], "summary": "Create a thing %d" % o,
                 "description": text(120, o + 1),
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing%d" % (o % 300)}}}},
                 "responses": {"201": {"description": "created", "content": {"application/json": {"schema": reply}}}}},
    }
document = {"openapi": "3.0.3", "info": {"title": "Generated", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:9/api"}],
            "components": {"schemas": schemas, "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
            "security": [{"token": []}], "paths": paths}
with open(out, "w") as f:
    json.dump(document, f)
