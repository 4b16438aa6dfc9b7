#!/usr/bin/env python3
"""A Sensor Cloud push receiver in Python: the standard library and PyJWT (pip install PyJWT, or Debian's
python3-jwt). It verifies X-Service-Signature exactly as the receiver kit does: HS256 only, exp and iat with a
clock skew, and the SHA-256 of the raw body against the checksum_sha256 claim, in constant time. While you roll
the connector's secret over, set PREVIOUS_SIGNATURE_SECRET to the old one: a push is accepted when
X-Service-Signature or X-Service-Signature-Previous verifies with either secret.

    SIGNATURE_SECRET=s3cret PORT=3000 python3 examples/python/receiver.py
    # HTTPS, as a data connector needs: also set CERT_FILE and KEY_FILE (PEM)
"""
import collections
import hashlib
import hmac
import http.server
import json
import os
import ssl
import sys
import time

import jwt  # PyJWT

SIGNATURE_HEADER = "X-Service-Signature"
# During a secret rotation's overlap: the same claims signed with the connector's previous secret.
PREVIOUS_SIGNATURE_HEADER = "X-Service-Signature-Previous"


class SignatureError(Exception):
    """Why a push was refused; `reason` uses the receiver kit's codes."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def header_of(headers, name):
    """A header's value from a mapping of names to values, matching the name in any case."""
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


def verify_signature(raw_body, headers, secrets, max_age_seconds=None, clock_skew_seconds=60):
    """Returns the claims of a valid signature, or raises SignatureError.

    raw_body: the request body as received (bytes, before any JSON parsing).
    headers: a mapping of header names to values; the name is matched in any case.
    secrets: the connector's signature secret, or a list of secrets while you roll it over. X-Service-Signature is
    checked, then X-Service-Signature-Previous when the push carries it; either verifying with any secret will do.
    """
    if isinstance(secrets, (str, bytes)):
        secrets = [secrets]
    token = header_of(headers, SIGNATURE_HEADER)
    if not token:
        raise SignatureError("missing_header", "no %s header" % SIGNATURE_HEADER)
    previous = header_of(headers, PREVIOUS_SIGNATURE_HEADER)
    tokens = [token, previous] if previous else [token]
    refusals = []
    for token in tokens:
        for secret in secrets:
            try:
                return verify_token(raw_body, token, secret, max_age_seconds, clock_skew_seconds)
            except SignatureError as err:
                refusals.append(err)
    # The most telling refusal: a changed body or an expired token says more than a secret that does not match.
    raise next((err for err in refusals if err.reason != "signature"), refusals[0])


def verify_token(raw_body, token, secret, max_age_seconds, clock_skew_seconds):
    """Checks one signature header's value with one secret: the claims, or raises SignatureError."""
    try:
        alg = jwt.get_unverified_header(token).get("alg")
    except jwt.DecodeError:
        raise SignatureError("malformed", "%s is not a JWT" % SIGNATURE_HEADER)
    # The algorithm is ours to choose, never the token's: alg none, HS512, RS256 ... are refused.
    if alg != "HS256":
        raise SignatureError("algorithm", "alg %r refused; only HS256 is accepted" % alg)
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], leeway=clock_skew_seconds,
                            options={"require": ["iat", "exp"]})
    except jwt.InvalidSignatureError:
        raise SignatureError("signature", "the signature does not match: wrong secret, or a changed token")
    except jwt.ExpiredSignatureError:
        raise SignatureError("expired", "the signature has expired")
    except (jwt.ImmatureSignatureError, jwt.InvalidIssuedAtError):
        raise SignatureError("issued_at", "iat is missing or in the future")
    except jwt.InvalidTokenError as err:
        raise SignatureError("malformed", "invalid token: %s" % err)
    if max_age_seconds is not None and time.time() - claims["iat"] > max_age_seconds + clock_skew_seconds:
        raise SignatureError("too_old", "the signature is older than %d s" % max_age_seconds)
    expected = claims.get("checksum_sha256")
    if not isinstance(expected, str):
        raise SignatureError("missing_checksum", "the signature carries no checksum_sha256")
    if not hmac.compare_digest(hashlib.sha256(raw_body).hexdigest(), expected.lower()):
        raise SignatureError("checksum_mismatch", "the body is not the one that was signed")
    return claims


class Deduplicator:
    """Event ids seen recently, bounded: delivery is at least once, so the same event may arrive twice."""

    def __init__(self, max_entries=100000, ttl_seconds=13 * 3600):
        self.entries = collections.OrderedDict()
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds

    def first_seen(self, event_id):
        now = time.time()
        expiry = self.entries.get(event_id)
        if expiry is not None and expiry > now:
            return False
        self.entries.pop(event_id, None)
        self.entries[event_id] = now + self.ttl_seconds
        while self.entries and (len(self.entries) > self.max_entries or next(iter(self.entries.values())) <= now):
            self.entries.popitem(last=False)
        return True


SECRET = os.environ.get("SIGNATURE_SECRET", "")
# While you roll the secret over: the old one too (docs/receiving.md).
SECRETS = [s for s in (SECRET, os.environ.get("PREVIOUS_SIGNATURE_SECRET", "")) if s]
DEDUP = Deduplicator()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            verify_signature(raw, self.headers, SECRETS, max_age_seconds=3600)
        except SignatureError as err:
            print("rejected: %s (%s)" % (err.reason, err), flush=True)
            self.answer(400, err.reason)
            return
        push = json.loads(raw)
        event = push["event"]
        if not DEDUP.first_seen(event["eventId"]):
            print("duplicate %s" % event["eventId"], flush=True)
            self.answer(200)
            return
        # Acknowledge at once; queue slow work (the service waits at most 10 s).
        self.answer(200)
        print("verified %s %s from %s %s" % (event["eventId"], event["eventType"], push["metadata"].get("deviceId"),
                                             json.dumps(push["labels"], separators=(",", ":"))), flush=True)

    def answer(self, status, text=""):
        body = (text + "\n").encode() if text else b""
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if not SECRET:
        print("set SIGNATURE_SECRET to the data connector's signature secret", file=sys.stderr)
        sys.exit(2)
    server = http.server.ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "3000"))), Handler)
    scheme = "http"
    if os.environ.get("CERT_FILE"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.environ["CERT_FILE"], os.environ.get("KEY_FILE"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    host, port = server.server_address[:2]
    print("listening on %s://%s:%d/hook" % (scheme, host, port), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
