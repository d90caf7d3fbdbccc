#!/usr/bin/env python3
"""Writes an RChat data set as Atlas Device Sync (partition-based) held it in MongoDB, exported
the ways `psync import` reads, for its tests and for trying a migration.

Collections (fields as in Sources/RChatModel/Models.swift, types as Realm wrote them):
  User         partition "user=<id>": _id (the App Services user id), userName (the email),
               userPreferences {displayName, avatarImage {_id, date, picture (binary),
               thumbNail (binary)}}, lastSeenAt (date), presence, conversations [{id,
               displayName, unreadCount (Int64), members [{userName, membershipStatus}]}]
  Chatster     partition "all-users=all-the-users": the public part of each User
  ChatMessage  partition "conversation=<id>": author, text, timestamp (date), image (an inline
               photo, binary), location ([Double], longitude then latitude, or empty)

Written into OUT as:
  mongoexport-relaxed/<Collection>.json          mongoexport (relaxed, one document per line)
  mongoexport-canonical/<Collection>.json        mongoexport --jsonFormat=canonical
  mongoexport-canonical-array/<Collection>.json  the same with --jsonArray
  mongodump/rchat/<Collection>.bson              mongodump, with <Collection>.metadata.json
                                                 (.bson.gz and .metadata.json.gz with --gzip)
  users.json                                     the App Services users, as the Admin API's
                                                 GET /groups/{groupId}/apps/{appId}/users
                                                 lists them

The same seed gives the same bytes. Requires PyMongo (scripts/install-import-tools.sh).

Usage: generate_rchat_export.py --out DIR [--seed N] [--users 20] [--conversations 10]
       [--messages 30] [--photo-bytes 20000] [--gzip]
"""

import argparse
import datetime
import gzip
import json
import os
import random
import uuid

import bson
from bson import Binary, Int64
from bson.codec_options import CodecOptions
from bson.json_util import JSONMode, JSONOptions
from bson.son import SON

CODEC = CodecOptions(tz_aware=True, tzinfo=datetime.timezone.utc)
RELAXED = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=True, tzinfo=datetime.timezone.utc)
CANONICAL = JSONOptions(json_mode=JSONMode.CANONICAL, tz_aware=True, tzinfo=datetime.timezone.utc)
COLLECTIONS = ("User", "Chatster", "ChatMessage")
PRESENCES = ("On-Line", "Off-Line", "Hidden")
PENDING, ACTIVE = "User added, but invite pending", "Membership active"
FIRST_NAMES = ("ann", "bob", "chloe", "dev", "emma", "farid", "grace", "hugo", "ines", "jon", "kiri", "lena",
               "marco", "nadia", "omar", "priya", "quinn", "rosa", "sven", "tara", "umar", "vera", "wes", "xia",
               "yusuf", "zoe")
WORDS = ("hello", "lunch", "tomorrow", "meeting", "photo", "great", "thanks", "see", "you", "at", "the", "park",
         "coffee", "train", "late", "ok", "sure", "weekend", "plan", "ready", "🎉", "ça", "va", "über", "naïve")
START = datetime.datetime(2023, 3, 1, tzinfo=datetime.timezone.utc)


class Generator:
    def __init__(self, rng, photo_bytes):
        self.rng, self.photo_bytes = rng, photo_bytes

    def hex_id(self):
        """A 24-hex-digit id, as App Services gives users."""
        return "%024x" % self.rng.getrandbits(96)

    def uuid_text(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def moment(self, days=300):
        """A time in the data set's span, at millisecond precision (what BSON keeps)."""
        return START + datetime.timedelta(milliseconds=self.rng.randrange(days * 86_400_000))

    def jpeg(self, size):
        """Bytes that start like a JPEG (SOI, APP0/JFIF) and end like one (EOI)."""
        header = bytes.fromhex("ffd8ffe000104a46494600010100000100010000")
        body = self.rng.randbytes(max(size - len(header) - 2, 0))
        return header + body + bytes.fromhex("ffd9")

    def photo(self):
        size = self.rng.randrange(self.photo_bytes // 2, self.photo_bytes + 1)
        return SON([("_id", self.uuid_text()), ("date", self.moment()),
                    ("picture", Binary(self.jpeg(size))), ("thumbNail", Binary(self.jpeg(max(size // 16, 32))))])

    def sentence(self):
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randrange(1, 12)))


def generate(seed, user_count, conversation_count, messages_per_conversation, photo_bytes):
    rng = random.Random(seed)
    make = Generator(rng, photo_bytes)
    users, accounts = [], []
    provider_id = make.hex_id()
    for number in range(user_count):
        user_id = make.hex_id()
        email = "%s%d@example.com" % (FIRST_NAMES[number % len(FIRST_NAMES)], number + 1)
        preferences = SON([("displayName", email.split("@")[0].capitalize())])
        if rng.random() < 0.7:
            preferences["avatarImage"] = make.photo()
        user = SON([("_id", user_id), ("partition", "user=" + user_id), ("userName", email),
                    ("userPreferences", preferences), ("lastSeenAt", make.moment()),
                    ("presence", rng.choice(PRESENCES)), ("conversations", [])])
        users.append(user)
        created = make.moment(days=30)
        accounts.append({
            "_id": user_id,
            "identities": [{"id": make.hex_id(), "provider_type": "local-userpass", "provider_id": provider_id}],
            "type": "normal",
            "creation_date": int(created.timestamp()),
            "last_authentication_date": int(make.moment().timestamp()),
            "disabled": rng.random() < 0.05,
            "data": {"email": email},
        })

    messages = []
    for _ in range(conversation_count):
        conversation_id = make.uuid_text()
        members = rng.sample(users, k=min(len(users), rng.randrange(2, 6)))
        author_names = [member["userName"] for member in members]
        display_name = " & ".join(name.split("@")[0] for name in author_names[:3])
        statuses = {member["userName"]: (ACTIVE if index == 0 or rng.random() < 0.8 else PENDING)
                    for index, member in enumerate(members)}
        for member in members:
            member["conversations"].append(SON([
                ("id", conversation_id), ("displayName", display_name),
                ("unreadCount", Int64(rng.randrange(0, messages_per_conversation + 1))),
                ("members", [SON([("userName", name), ("membershipStatus", statuses[name])])
                             for name in author_names]),
            ]))
        for _ in range(messages_per_conversation):
            message = SON([("_id", make.uuid_text()), ("partition", "conversation=" + conversation_id),
                           ("author", rng.choice(author_names)), ("text", make.sentence()),
                           ("timestamp", make.moment())])
            if rng.random() < 0.2:
                message["image"] = make.photo()
            message["location"] = ([round(rng.uniform(-180, 180), 6), round(rng.uniform(-90, 90), 6)]
                                   if rng.random() < 0.3 else [])
            messages.append(message)
    messages.sort(key=lambda message: message["timestamp"])

    chatsters = []
    for user in users:
        chatster = SON([("_id", user["_id"]), ("partition", "all-users=all-the-users"),
                        ("userName", user["userName"]),
                        ("displayName", user["userPreferences"].get("displayName"))])
        if "avatarImage" in user["userPreferences"]:
            chatster["avatarImage"] = user["userPreferences"]["avatarImage"]
        chatster["lastSeenAt"] = user["lastSeenAt"]
        chatster["presence"] = user["presence"]
        chatsters.append(chatster)
    return {"User": users, "Chatster": chatsters, "ChatMessage": messages}, accounts


def metadata(collection, rng):
    """A mongodump <collection>.metadata.json document."""
    return SON([
        ("indexes", [SON([("v", 2), ("key", SON([("_id", 1)])), ("name", "_id_")]),
                     SON([("v", 2), ("key", SON([("partition", 1)])), ("name", "partition_1")])]),
        ("uuid", "%032x" % rng.getrandbits(128)),
        ("collectionName", collection),
        ("type", "collection"),
    ])


def write(path, data, compress=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if compress:
        with gzip.GzipFile(path + ".gz", "wb", mtime=0) as target:
            target.write(data)
    else:
        with open(path, "wb") as target:
            target.write(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=None, help="default: a random one (printed)")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--messages", type=int, default=30, help="per conversation")
    parser.add_argument("--photo-bytes", type=int, default=20_000, help="the largest picture")
    parser.add_argument("--gzip", action="store_true", help="mongodump --gzip: .bson.gz and .metadata.json.gz")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print("seed %d" % seed, flush=True)

    collections, accounts = generate(seed, args.users, args.conversations, args.messages, args.photo_bytes)
    metadata_rng = random.Random(seed + 1)
    for name in COLLECTIONS:
        documents = collections[name]
        # mongoexport writes compact Extended JSON v2, one document per line (or one array).
        relaxed = [bson.json_util.dumps(d, json_options=RELAXED, separators=(",", ":")) for d in documents]
        canonical = [bson.json_util.dumps(d, json_options=CANONICAL, separators=(",", ":")) for d in documents]
        write(os.path.join(args.out, "mongoexport-relaxed", name + ".json"), "".join(l + "\n" for l in relaxed).encode())
        write(os.path.join(args.out, "mongoexport-canonical", name + ".json"),
              "".join(l + "\n" for l in canonical).encode())
        write(os.path.join(args.out, "mongoexport-canonical-array", name + ".json"),
              ("[" + ",".join(canonical) + "]").encode())
        dump = os.path.join(args.out, "mongodump", "rchat", name)
        write(dump + ".bson", b"".join(bson.encode(d, codec_options=CODEC) for d in documents), args.gzip)
        write(dump + ".metadata.json",
              bson.json_util.dumps(metadata(name, metadata_rng), json_options=CANONICAL, separators=(",", ":")).encode(),
              args.gzip)
        print("%-12s %6d documents" % (name, len(documents)))
    write(os.path.join(args.out, "users.json"), (json.dumps(accounts, indent=2) + "\n").encode())
    print("users.json   %6d users" % len(accounts))


if __name__ == "__main__":
    main()
