#!/usr/bin/env python3
"""Writes the test vectors of `psync import` (Tests/SyncImportTests/Fixtures/pymongo/) with
PyMongo's `bson` package, so that the Swift tests check the readers against an independent
encoder and never need Python themselves.

Every vector is one document {"_id": <name>, "v": <value>} (a few are whole documents),
written four ways:

  vectors.bson             the documents as BSON, one after another (mongodump's layout)
  vectors.canonical.json   canonical Extended JSON v2, one document per line (mongoexport)
  vectors.relaxed.json     relaxed Extended JSON v2, one document per line
  vectors.expected.json    one line per document: the JSON body the import must make of it
                           ({"name", "body"}), or the refusal it must report ({"name",
                           "refuse": <ImportError.Kind>, "path": <field path>}), derived here,
                           independently of the Swift code, from the type table of
                           docs/MIGRATING.md under the default ImportPolicy.

plus gzip-compressed copies and a --jsonArray copy of the canonical file. Types PyMongo
cannot encode (Symbol, Undefined, DBPointer) are written as hand-made BSON bytes and Extended
JSON text from the BSON and Extended JSON specifications.

Usage: scripts/install-import-tools.sh, then
  .build-import-venv/bin/python scripts/generate_import_vectors.py [--out DIR]
"""

import argparse
import base64
import datetime
import gzip
import json
import os
import struct
import uuid

import bson
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.json_util import JSONMode, JSONOptions
from bson.son import SON

CODEC = CodecOptions(uuid_representation=UuidRepresentation.STANDARD, datetime_conversion=DatetimeConversion.DATETIME_MS)
RELAXED = JSONOptions(json_mode=JSONMode.RELAXED, uuid_representation=UuidRepresentation.STANDARD,
                      datetime_conversion=DatetimeConversion.DATETIME_MS)
CANONICAL = JSONOptions(json_mode=JSONMode.CANONICAL, uuid_representation=UuidRepresentation.STANDARD,
                        datetime_conversion=DatetimeConversion.DATETIME_MS)

EARLIEST_MS = -62135596800000   # 0001-01-01T00:00:00.000Z
LATEST_MS = 253402300799999     # 9999-12-31T23:59:59.999Z


class Refusal(Exception):
    def __init__(self, kind, path):
        self.kind, self.path = kind, path


def path_text(path):
    text = ""
    for component in path:
        if isinstance(component, int):
            text += "[%d]" % component
        elif component and not any(c in component for c in '".[]') and all(ord(c) >= 0x20 for c in component):
            text += ("." if text else "") + component
        else:
            text += "[" + json.dumps(component) + "]"
    return text


def rfc3339(ms):
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (moment.year, moment.month, moment.day, moment.hour, moment.minute,
                                                   moment.second, moment.microsecond // 1000)


def expected(value, path):
    """The JSON the import makes of a value under the default policy (the table's oracle)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, Int64)):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise Refusal("unsupportedValue", path)
        return value
    if isinstance(value, (Timestamp, Regex, Code, MinKey, MaxKey)):  # (Code is a str)
        raise Refusal("unsupportedValue", path)
    if isinstance(value, str):
        if "\0" in value:
            raise Refusal("invalidField", path)
        return value
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, Decimal128):
        return str(value)
    if isinstance(value, DatetimeMS):
        ms = int(value)
        if not EARLIEST_MS <= ms <= LATEST_MS:
            raise Refusal("unsupportedValue", path)
        return rfc3339(ms)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Binary):
        if value.subtype == 4:
            return str(uuid.UUID(bytes=bytes(value)))
        if value.subtype == 3:
            raise Refusal("unsupportedValue", path)
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, DBRef):
        return expected(value.as_doc(), path)
    if isinstance(value, list):
        return [expected(element, path + [index]) for index, element in enumerate(value)]
    if isinstance(value, dict):
        return {key: expected(element, path + [key]) for key, element in value.items()}
    raise TypeError("no expectation for %r" % (value,))


def vectors():
    """(name, value) pairs: each becomes {"_id": name, "v": value}."""
    oid = ObjectId("5f1b2c3d4e5f60718293a4b5")
    yield from [
        ("objectid", oid),
        ("objectid-zero", ObjectId("000000000000000000000000")),
        ("string", "héllo wörld 🌍"),
        ("string-empty", ""),
        ("string-escapes", "quote \" backslash \\ newline \n tab \t control \u0001"),
        ("string-nul", "a\u0000b"),
        ("int32", 42),
        ("int32-max", 2**31 - 1),
        ("int32-min", -2**31),
        ("int64-small", Int64(7)),
        ("int64-max", Int64(2**63 - 1)),
        ("int64-min", Int64(-2**63)),
        ("int64-2^53+1", Int64(2**53 + 1)),
        ("int64-beyond-int32", 2**31),
        ("double", 1.5),
        ("double-integral", 1.0),
        ("double-negative-zero", -0.0),
        ("double-large", 1e300),
        ("double-small", 5e-324),
        ("double-max", 1.7976931348623157e308),
        ("double-2^53+1-rounds", float(2**53 + 1)),
        ("double-nan", float("nan")),
        ("double-infinity", float("inf")),
        ("double-negative-infinity", float("-inf")),
        ("bool-true", True),
        ("bool-false", False),
        ("null", None),
        ("decimal-1234.5", Decimal128("1234.5")),
        ("decimal-zero", Decimal128("0")),
        ("decimal-negative-zero", Decimal128("-0")),
        ("decimal-negative-zero-exponent", Decimal128("-0E+3")),
        ("decimal-nan", Decimal128("NaN")),
        ("decimal-negative-nan", Decimal128("-NaN")),
        ("decimal-snan", Decimal128("sNaN")),
        ("decimal-infinity", Decimal128("Infinity")),
        ("decimal-negative-infinity", Decimal128("-Infinity")),
        ("decimal-max", Decimal128("9.999999999999999999999999999999999E+6144")),
        ("decimal-min-positive", Decimal128("1E-6176")),
        ("decimal-clamped", Decimal128("1E+6144")),
        ("decimal-34-digits", Decimal128("1234567890123456789012345678901234")),
        ("decimal-small-plain", Decimal128("0.000001234")),
        ("decimal-small-exponent", Decimal128("0.0000001234")),
        ("decimal-trailing-zeros", Decimal128("12.70")),
        ("decimal-positive-exponent", Decimal128("1E+3")),
        # Coefficients past 34 digits are non-canonical encodings of zero (IEEE 754-2008, 3.5.2):
        # one past 10^34 - 1, one with the implied "100" prefix of the "11" combination field.
        ("decimal-coefficient-10^34", Decimal128.from_bid((6176 << 113 | 10**34).to_bytes(16, "little"))),
        ("decimal-coefficient-too-large", Decimal128.from_bid(bytes.fromhex("ffffffffffffffffffffffffffff0130"))),
        ("decimal-implied-prefix", Decimal128.from_bid((0x6C10 << 112 | 5).to_bytes(16, "little"))),
        ("date-epoch", DatetimeMS(0)),
        ("date-2026", DatetimeMS(1795608000000)),
        ("date-1969", DatetimeMS(-1)),
        ("date-year-1", DatetimeMS(EARLIEST_MS)),
        ("date-9999", DatetimeMS(LATEST_MS)),
        ("date-year-10000", DatetimeMS(LATEST_MS + 1)),
        ("date-year-0", DatetimeMS(EARLIEST_MS - 1)),
        ("date-int64-max", DatetimeMS(2**63 - 1)),
        ("date-int64-min", DatetimeMS(-2**63)),
        ("uuid", uuid.UUID("c8edabc3-f738-4ca3-b68d-ab92a91478a3")),
        ("uuid-legacy-subtype-3", Binary(uuid.UUID("c8edabc3-f738-4ca3-b68d-ab92a91478a3").bytes, 3)),
        ("binary-generic", Binary(b"\x00\x01\x02\xfe\xff", 0)),
        ("binary-empty", Binary(b"", 0)),
        ("binary-function", Binary(b"fn", 1)),
        ("binary-old", Binary(b"old!", 2)),
        ("binary-md5", Binary(bytes(range(16)), 5)),
        ("binary-encrypted", Binary(b"\x01secret", 6)),
        ("binary-compressed-column", Binary(b"\x07col", 7)),
        ("binary-sensitive", Binary(b"pii", 8)),
        ("binary-vector", Binary(b"\x03\x00\x01\x02", 9)),
        ("binary-user-defined", Binary(b"user", 0x80)),
        ("timestamp", Timestamp(1700000000, 7)),
        ("timestamp-max", Timestamp(2**32 - 1, 2**32 - 1)),
        ("regex", Regex("^a.*b$", "imx")),
        ("code", Code("function () { return 1; }")),
        ("code-with-scope", Code("function () { return x; }", {"x": 1})),
        ("minkey", MinKey()),
        ("maxkey", MaxKey()),
        ("dbref", DBRef("User", oid)),
        ("dbref-with-db", DBRef("User", "u-1", "rchat", extra=1)),
        ("document-empty", {}),
        ("array-empty", []),
        ("document-nested", SON([("a", SON([("b", SON([("c", [1, SON([("d", None)])])]))]))])),
        ("array-of-documents", [SON([("x", 1)]), SON([("y", [SON([("z", Int64(2))]), []])]), []]),
        ("array-nested", [[[]], [[1, 2], ["a"]]]),
        ("field-names-dots-dollars", SON([("a.b", 1), ("$c", 2), ("$ref", "not a dbref"), ("", 3), ("é", 4)])),
        ("nested-refusal", [1, SON([("when", Timestamp(1, 1))])]),
    ]


def hand_made():
    """Types PyMongo cannot encode: (name, value BSON element bytes after the key, type byte,
    Extended JSON text of the value, expectation)."""
    def string(text):
        raw = text.encode() + b"\0"
        return struct.pack("<i", len(raw)) + raw
    oid = bytes.fromhex("5f1b2c3d4e5f60718293a4b5")
    return [
        ("symbol", 0x0E, string("a symbol"), '{"$symbol": "a symbol"}', {"body": {"_id": "symbol", "v": "a symbol"}}),
        ("undefined", 0x06, b"", '{"$undefined": true}', {"body": {"_id": "undefined", "v": None}}),
        ("dbpointer", 0x0C, string("rchat.User") + oid,
         '{"$dbPointer": {"$ref": "rchat.User", "$id": {"$oid": "5f1b2c3d4e5f60718293a4b5"}}}',
         {"refuse": "unsupportedValue", "path": "v"}),
        ("uuid-text-form", 0x05, struct.pack("<i", 16) + b"\x04" + uuid.UUID("00112233-4455-6677-8899-aabbccddeeff").bytes,
         '{"$uuid": "00112233-4455-6677-8899-aabbccddeeff"}', {"body": {"_id": "uuid-text-form", "v": "00112233-4455-6677-8899-aabbccddeeff"}}),
    ]


def element_document(name, type_byte, value_bytes):
    body = b"\x02_id\0" + struct.pack("<i", len(name) + 1) + name.encode() + b"\0"
    body += bytes([type_byte]) + b"v\0" + value_bytes
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "Tests", "SyncImportTests",
                                                     "Fixtures", "pymongo"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    bson_bytes, canonical, relaxed, expectations = b"", [], [], []

    def add(name, document, bson_data=None, canonical_text=None, relaxed_text=None, expectation=None):
        nonlocal bson_bytes
        data = bson_data if bson_data is not None else bson.encode(document, codec_options=CODEC)
        # The hand-made bytes must read back as PyMongo reads them, where it can.
        bson_bytes += data
        canonical.append(canonical_text or bson.json_util.dumps(document, json_options=CANONICAL))
        relaxed.append(relaxed_text or bson.json_util.dumps(document, json_options=RELAXED))
        if expectation is None:
            try:
                expectation = {"body": expected(document, [])}
            except Refusal as refusal:
                expectation = {"refuse": refusal.kind, "path": path_text(refusal.path)}
        expectations.append(dict(name=name, **expectation))

    for name, value in vectors():
        add(name, SON([("_id", name), ("v", value)]))

    for name, type_byte, value_bytes, extended, expectation in hand_made():
        data = element_document(name, type_byte, value_bytes)
        text = '{"_id": %s, "v": %s}' % (json.dumps(name), extended)
        add(name, None, data, text, text, expectation)

    # Whole documents: empty, no _id, dotted and $ top-level names, an ObjectId _id.
    add("whole-empty", SON())
    add("whole-top-level-names", SON([("_id", ObjectId("65a1b2c3d4e5f60718293a4b")), ("a.b", "dotted"),
                                       ("$d", "dollar"), ("partition", "user=1")]))

    with open(os.path.join(args.out, "vectors.bson"), "wb") as f:
        f.write(bson_bytes)
    for name, lines in (("vectors.canonical.json", canonical), ("vectors.relaxed.json", relaxed)):
        with open(os.path.join(args.out, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "vectors.canonical-array.json"), "w") as f:
        f.write("[" + ",\n".join(canonical) + "]\n")
    with open(os.path.join(args.out, "vectors.expected.json"), "w") as f:
        for expectation in expectations:
            f.write(json.dumps(expectation, ensure_ascii=False, sort_keys=True) + "\n")
    for name in ("vectors.bson", "vectors.relaxed.json"):
        with open(os.path.join(args.out, name), "rb") as source, \
                gzip.GzipFile(os.path.join(args.out, name + ".gz"), "wb", mtime=0) as target:
            target.write(source.read())
    print("wrote %d vectors with pymongo %s to %s" % (len(expectations), bson.__name__ and __import__("pymongo").version,
                                                      os.path.normpath(args.out)))


if __name__ == "__main__":
    main()
