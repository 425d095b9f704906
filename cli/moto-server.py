"""The embedded emulator's launcher: moto's own server, with its per-request overheads taken out.

`trawl` starts this file with the interpreter of `.emulator/venv` instead of the `moto_server`
script. Each change below is measured (README "The embedded emulator") and keeps what moto
answers as it was: a cache of something moto recomputes on every request, a faster clock read, or
one pass over a queue where moto made several. They apply to the pinned moto version only
(scripts/setup.sh): any other version runs unpatched, as `moto_server` would, and so does any
version with TRAWL_EMULATOR_PLAIN=1 in the environment.

- `list_of_moto_modules` lists moto's package directory (an `isdir` per service, ~200) on every
  request to find the request's service: the listing is cached.
- `method_names_from_class` runs `inspect.getmembers` over the whole response class on every
  request to look the action up: cached per class. `camelcase_to_underscores` is cached too.
- SQS: moto builds `queue.attributes`, which counts the visible, in-flight and delayed messages
  (three passes over every message of the queue, a clock read per message and pass), for every
  message sent (to look up one FIFO flag) and three times for every message received (to look up
  the retention period): with 3,000 messages in a queue a SendMessageBatch took ~0.5 s and a
  ReceiveMessage of 10 several seconds. A standard queue's send no longer builds them and a
  receive reads the retention period itself; GetQueueAttributes still counts (with the faster
  clock below: 154 a second on a queue of 3,000). A delete finds its message in one pass instead
  of two.
- SQS: a receipt handle (185 random letters) is drawn in one call instead of one per letter,
  and a received message made of strings (string attributes only) goes out as it is instead of
  through moto's model walk (binary attributes are left to moto).
- SQS: a message's `visible` and `delayed` read the clock through naive datetime arithmetic
  (~10 µs each); `time.time()` gives the same number, and the visible messages a receive walks
  through are found with one clock read.
- DynamoDB: a condition expression is parsed twice per conditional write (once to validate, once
  to evaluate), ~0.6 ms each: the parse of an expression with the same names and values is kept
  (4,096 at most; the tree is only read when evaluated), so a claimer's run of claims parses once.
- DynamoDB: an item checks its 400 KB limit as each attribute is added, summing the sizes of all
  the attributes so far each time (quadratic in the attributes, ~0.3 ms for a claim's 12): a new
  item keeps one running total instead. The same items are refused, at the same attribute, with
  the same error.
- DynamoDB reads: moto 5.2 serializes a response by walking botocore's model for every value,
  each member looked up through an attribute picker (~0.1 ms an attribute): a Scan of a
  10,000-URL table took 9 s, nearly all of it there. An item's attribute values are already in
  the wire's shape; made of strings, numbers, flags, lists and maps they are sent as they are
  (binary is left to moto, which base64-encodes it); requests are parsed the same way (a
  PutItem's item, a BatchGetItem's keys, a condition's values). And a Scan, which sorts the whole table for
  every page it answers, sorts by keys cast once an item instead of once per comparison.
- Memory: moto lists every model instance it makes in its class (for its /moto-api/ browser):
  every DynamoDB item written and every copy a read made of one, every SQS message. The server
  grew by ~55 MB with every read of a 30,000-URL table until stopped. Items and messages are not
  listed any more.
- HTTP keep-alive (werkzeug 3.1 only): werkzeug's server answers every request with
  `Connection: close`, as Python's http.server would not skip an unread request body before the
  next request; then it reads whatever the client sends next off the socket for 10 ms to throw it
  away. So every request cost a TCP connection, a thread and its teardown: about a quarter of the
  server's CPU under a crawl. Now a request whose body is delimited (Content-Length, or chunked)
  leaves the rest of its body read and thrown away after the answer, so the connection can carry
  the next request; the client keeps its connections as it would with AWS.
- werkzeug's access log (a line per request, never rotated) is off; errors are still logged.
"""

import functools
import json
import logging
import os
import random
import string
import sys
import threading
import time

PATCHED_VERSION = "5.2.5"


def _patch() -> None:
    import moto.backends as backends
    import moto.core.utils as core_utils

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: iter(modules)

    camel = functools.lru_cache(maxsize=4096)(core_utils.camelcase_to_underscores)
    core_utils.camelcase_to_underscores = camel

    methods_of: dict[object, list[str]] = {}
    uncached_methods = core_utils.method_names_from_class

    def method_names_from_class(clazz: object) -> list[str]:
        names = methods_of.get(clazz)
        if names is None:
            names = methods_of[clazz] = uncached_methods(clazz)
        return list(names)

    core_utils.method_names_from_class = method_names_from_class

    import moto.core.responses as core_responses

    core_responses.camelcase_to_underscores = camel
    core_responses.method_names_from_class = method_names_from_class

    # moto keeps every model instance it ever made in a class list (for its /moto-api/ data
    # browser and reset): every DynamoDB item written, every copy a read made of one, every SQS
    # message sent, deleted or not, for the life of the server. Items and messages are no longer
    # listed there (trawl uses neither the browser nor reset); the tables and queues still hold
    # theirs.
    import moto.dynamodb.models.dynamo_type as dynamo_type
    import moto.sqs.models as sqs_models

    for model in (dynamo_type.Item, sqs_models.Message):
        model.__new__ = _untracked_new

    _patch_sqs()
    _patch_dynamodb()
    _patch_keep_alive()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)


def _untracked_new(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
    return object.__new__(cls)


def _patch_dynamodb() -> None:
    import moto.dynamodb.comparisons as comparisons
    import moto.dynamodb.models.dynamo_type as dynamo_type
    import moto.dynamodb.models.table as table_module

    parser_class = comparisons.ConditionExpressionParser
    uncached_parse = parser_class.parse
    parsed: dict[tuple[str, str, str], tuple[object, list[str], list[str]]] = {}

    def parse(self):  # type: ignore[no-untyped-def]
        try:
            key = (
                json.dumps(self.condition_expression),
                json.dumps(self.expression_attribute_names, sort_keys=True),
                json.dumps(self.expression_attribute_values, sort_keys=True),
            )
        except (TypeError, ValueError):
            return uncached_parse(self)
        hit = parsed.get(key)
        if hit is None:
            op = uncached_parse(self)  # errors are raised each time, never kept
            if len(parsed) >= 4096:
                parsed.clear()
            parsed[key] = (op, list(self.expr_attr_names_found), list(self.expr_attr_values_found))
            return op
        op, names_found, values_found = hit
        self.expr_attr_names_found = list(names_found)
        self.expr_attr_values_found = list(values_found)
        return op

    parser_class.parse = parse

    item_class = dynamo_type.Item
    DynamoType = dynamo_type.DynamoType
    bytesize = dynamo_type.bytesize

    def item_init(self, hash_key, range_key, attrs):  # type: ignore[no-untyped-def]
        # moto adds the attributes one by one, each add summing the sizes of all so far; a running
        # total refuses each item at the same attribute, with the same error.
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = dynamo_type.LimitedSizeDict()
        total = 0
        for key, value in attrs.items():
            converted = DynamoType(value)
            total += bytesize(key) + converted.size()
            if total > 405000:
                raise dynamo_type.ItemSizeTooLarge
            dict.__setitem__(self.attrs, key, converted)

    item_class.__init__ = item_init

    # A Scan sorts the whole table by key for every page it answers; sorting by the DynamoType
    # compared each pair through `cast_value` (a Decimal made per comparison for numbers), 2n log n
    # times. The same order from keys cast once an item (a key column has one type, fixed by the
    # table's schema, so comparing the cast values is what DynamoType's comparisons do).
    table_class = table_module.Table

    def all_items(self):  # type: ignore[no-untyped-def]
        items = []
        for hash_set in self.items.values():
            if self.range_key_attr:
                items.extend(hash_set.values())
            else:
                items.append(hash_set)
        return sorted(
            items,
            key=lambda x: (x.hash_key.cast_value, x.range_key.cast_value) if x.range_key else x.hash_key.cast_value,
        )

    table_class.all_items = all_items

    _patch_attribute_values()


# The AttributeValue members whose plain value is what the JSON protocol sends as it is.
_PLAIN_MEMBERS = {"S": str, "N": str, "BOOL": bool, "NULL": bool, "SS": list, "NS": list}


# DynamoDB nests values 32 levels deep at most; deeper ones are left to moto. A value moto walks
# itself (binary inside) is checked again at each level of its walk: the bound keeps that check,
# and its stack, small.
_PLAIN_DEPTH = 32


def _plain_attribute_value(value, depth=0):  # type: ignore[no-untyped-def]
    """`value` as the wire's JSON when it is made of strings, numbers as strings, flags, lists and
    maps only (no binary: moto base64-encodes bytes); else None, and moto serializes it. A map
    with an empty key is left to moto too: moto answers one flattened into its parent (a bug of
    moto's that a patch must not change)."""
    if depth > _PLAIN_DEPTH or not isinstance(value, dict) or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    plain = _PLAIN_MEMBERS.get(kind)
    if plain is not None:
        if type(inner) is not plain:
            return None
        if plain is list and not all(type(v) is str for v in inner):
            return None
        return value
    if kind == "L" and type(inner) is list:
        out = [_plain_attribute_value(v, depth + 1) for v in inner]
        return None if any(v is None for v in out) else {"L": out}
    if kind == "M" and type(inner) is dict and "" not in inner:
        members = {k: _plain_attribute_value(v, depth + 1) for k, v in inner.items()}
        return None if any(v is None for v in members.values()) else {"M": members}
    return None


def _patch_attribute_values() -> None:
    import moto.core.serialize as serialize

    # moto 5.2 serializes a response by walking botocore's model for every value, looking each
    # member up through an attribute picker: about 0.1 ms an attribute, so a Scan page of 1 MB
    # took seconds and a read of a 30,000-URL table most of a minute. A DynamoDB item's
    # attribute values are already in the wire's shape (dynamo_to_dict): sent as they are, unless
    # one holds binary (left to moto, which base64-encodes it).
    serializer_class = serialize.BaseJSONSerializer
    uncached_structure = serializer_class._serialize_type_structure

    def serialize_structure(self, serialized, value, shape, key):  # type: ignore[no-untyped-def]
        if key and shape.name == "AttributeValue" and _is_dynamodb(self.operation_model):
            plain = _plain_attribute_value(value)
            if plain is not None:
                serialized[self.get_serialized_name(shape, key)] = plain
                return
        if key and shape.name == "Message" and _service(self.operation_model) == "sqs":
            plain = _plain_message(value)
            if plain is not None:
                serialized[self.get_serialized_name(shape, key)] = plain
                return
        uncached_structure(self, serialized, value, shape, key)

    serializer_class._serialize_type_structure = serialize_structure

    # The same walk parsed every request: a PutItem's item, a BatchGetItem's keys, a condition's
    # values, each AttributeValue checked against its ten possible members. Parsed, a plain
    # value is the JSON it came as (binary is left to moto, which base64-decodes it).
    import moto.core.parse as parse

    parser_class = parse.BaseJSONParser
    uncached_parse_structure = parser_class._parse_structure

    def parse_structure(self, shape, value):  # type: ignore[no-untyped-def]
        if shape.name == "AttributeValue" and _is_dynamodb(self.operation_model):
            plain = _plain_attribute_value(value)
            if plain is not None:
                return plain
        return uncached_parse_structure(self, shape, value)

    parser_class._parse_structure = parse_structure


# An SQS message as ReceiveMessage answers it, in the model's member order.
_MESSAGE_STRINGS = ("MessageId", "ReceiptHandle", "MD5OfBody", "Body")


def _plain_message(value):  # type: ignore[no-untyped-def]
    """A received message (moto's dict) as the wire's JSON when it holds strings only, and
    message attributes of string values only (binary ones are left to moto); else None."""
    if type(value) is not dict:
        return None
    out = {}
    for key in _MESSAGE_STRINGS:
        v = value.get(key)
        if v is None:
            continue
        if type(v) is not str:
            return None
        out[key] = v
    attributes = value.get("Attributes")
    if attributes is not None:
        if type(attributes) is not dict or not all(type(v) is str for v in attributes.values()):
            return None
        out["Attributes"] = attributes
    md5 = value.get("MD5OfMessageAttributes")
    if md5 is not None:
        if type(md5) is not str:
            return None
        out["MD5OfMessageAttributes"] = md5
    message_attributes = value.get("MessageAttributes")
    if message_attributes is not None:
        if type(message_attributes) is not dict:
            return None
        plain = {}
        for name, attribute in message_attributes.items():
            if (
                type(attribute) is not dict
                or not set(attribute) <= {"StringValue", "DataType"}
                or not all(type(v) is str for v in attribute.values())
            ):
                return None
            plain[name] = {k: attribute[k] for k in ("StringValue", "DataType") if k in attribute}
        out["MessageAttributes"] = plain
    if set(value) - set(out) - {k for k, v in value.items() if v is None}:
        return None  # a member this does not know: moto serializes it
    return out


def _service(operation_model) -> str:  # type: ignore[no-untyped-def]
    return operation_model.service_model.service_name


def _is_dynamodb(operation_model) -> bool:  # type: ignore[no-untyped-def]
    return _service(operation_model) == "dynamodb"


def _patch_sqs() -> None:
    import moto.sqs.models as sqs_models

    # A receipt handle is 185 random lowercase letters, drawn with a random.choice call each
    # (~0.2 ms a message received); the same letters drawn in one random.choices call.
    letters = string.ascii_lowercase

    def generate_receipt_handle() -> str:
        return "".join(random.choices(letters, k=185))

    sqs_models.generate_receipt_handle = generate_receipt_handle

    slow_unix_time = sqs_models.unix_time
    slow_unix_time_millis = sqs_models.unix_time_millis

    def unix_time(dt=None):  # type: ignore[no-untyped-def]
        return time.time() if dt is None else slow_unix_time(dt)

    def unix_time_millis(dt=None):  # type: ignore[no-untyped-def]
        return time.time() * 1000.0 if dt is None else slow_unix_time_millis(dt)

    sqs_models.unix_time = unix_time
    sqs_models.unix_time_millis = unix_time_millis

    queue_class = sqs_models.Queue
    full_attributes = queue_class.attributes.fget
    local = threading.local()

    def attributes(self):  # type: ignore[no-untyped-def]
        # While a message is sent to a standard queue, moto reads only the FIFO flag
        # ContentBasedDeduplication, which a standard queue does not have.
        if getattr(local, "sending", 0) and not self.fifo_queue:
            return {}
        return full_attributes(self)

    def messages(self):  # type: ignore[no-untyped-def]
        now = time.time() * 1000.0
        return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]

    queue_class.attributes = property(attributes)
    queue_class.messages = property(messages)

    backend_class = sqs_models.SQSBackend
    for name in ("send_message", "send_message_batch"):
        original = getattr(backend_class, name)

        def wrapped(self, *args, __original=original, **kwargs):  # type: ignore[no-untyped-def]
            local.sending = getattr(local, "sending", 0) + 1
            try:
                return __original(self, *args, **kwargs)
            finally:
                local.sending -= 1

        functools.update_wrapper(wrapped, original)
        setattr(backend_class, name, wrapped)

    def is_message_valid_based_on_retention_period(self, queue_name, message):  # type: ignore[no-untyped-def]
        # moto reads the period through get_queue_attributes (three attribute builds a message).
        retention_period = self.get_queue(queue_name).message_retention_period
        return retention_period + message.sent_timestamp / 1000 > unix_time()

    backend_class.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

    def delete_message(self, receipt_handle):  # type: ignore[no-untyped-def]
        # moto's passes over the queue twice, three method calls and a list built per message.
        if receipt_handle in self.deleted_messages:
            return
        kept = []
        found = False
        for message in self._messages:
            if message.receipt_handle == receipt_handle or receipt_handle in message._old_receipt_handles:
                found = True
                self.pending_messages.discard(message)
                self.deleted_messages.update(message.all_receipt_handles)
            else:
                kept.append(message)
        if not found:
            raise sqs_models.ReceiptHandleIsInvalid()
        self._messages = kept

    queue_class.delete_message = delete_message


class _BodyRest:
    """A request body of Content-Length bytes: reads stop at its end, and the rest can be skipped."""

    def __init__(self, stream, length: int):  # type: ignore[no-untyped-def]
        self._stream = stream
        self._left = length

    def _take(self, read, size: int) -> bytes:  # type: ignore[no-untyped-def]
        if self._left <= 0:
            return b""
        data = read(self._left if size is None or size < 0 else min(size, self._left))
        self._left = self._left - len(data) if data else 0
        return data

    def read(self, size: int = -1) -> bytes:
        return self._take(self._stream.read, size)

    def readline(self, size: int = -1) -> bytes:
        return self._take(self._stream.readline, size)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.readline, b"")

    def skip_rest(self) -> bool:
        """Reads what the application left of the body; False when the stream ended before it."""
        while self._left > 0:
            if not self.read(1 << 20):
                return False
        return True


_SKIP_LIMIT = 64 * 1024 * 1024


def _rest_skipped(body) -> bool:  # type: ignore[no-untyped-def]
    """Reads what the application left of a request body: True when the connection can go on."""
    if body is None:
        return True
    if isinstance(body, _BodyRest):
        return body.skip_rest()
    skipped = 0  # chunked (werkzeug's DechunkedInput): to its last chunk, within the limit
    while skipped <= _SKIP_LIMIT:
        chunk = body.read(1 << 20)
        if not chunk:
            return True
        skipped += len(chunk)
    return False


def _patch_keep_alive() -> None:
    import importlib.metadata
    import selectors
    import types

    import werkzeug.serving as serving

    if not importlib.metadata.version("werkzeug").startswith("3.1."):
        return
    handler = serving.WSGIRequestHandler
    send_header = handler.send_header
    make_environ = handler.make_environ
    run_wsgi = handler.run_wsgi

    class NoSocketDrain:
        # werkzeug's run_wsgi reads the socket for 10 ms after each answer and throws the bytes
        # away (safe only because it closes every connection); here the next request is kept.
        def register(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return None

        def select(self, timeout=None):  # type: ignore[no-untyped-def]
            return []

        def close(self) -> None:
            return None

    serving.selectors = types.SimpleNamespace(DefaultSelector=NoSocketDrain, EVENT_READ=selectors.EVENT_READ)

    def keep_alive_send_header(self, keyword, value):  # type: ignore[no-untyped-def]
        if keyword.lower() == "connection" and value.lower() == "close" and getattr(self, "trawl_keep", False):
            return None
        return send_header(self, keyword, value)

    def delimited_environ(self):  # type: ignore[no-untyped-def]
        environ = make_environ(self)
        self.trawl_keep = self.request_version == "HTTP/1.1"
        if environ.get("wsgi.input_terminated"):
            return environ  # chunked: werkzeug's DechunkedInput stops at the last chunk
        length = environ.get("CONTENT_LENGTH")
        try:
            size = int(length) if length not in (None, "") else 0
        except ValueError:
            size = -1
        if size < 0 or size > _SKIP_LIMIT:
            self.trawl_keep = False
            return environ
        environ["wsgi.input"] = _BodyRest(environ["wsgi.input"], size)
        return environ

    def keep_alive_run_wsgi(self) -> None:
        self.trawl_keep = False
        try:
            run_wsgi(self)
        finally:
            kept = getattr(self, "trawl_keep", False)
            if kept:
                try:
                    kept = _rest_skipped(getattr(self, "environ", {}).get("wsgi.input"))
                except Exception:
                    kept = False
            if not kept:
                self.close_connection = True

    # Headers and body go out in separate writes: with Nagle's algorithm on a kept connection the
    # body waits for the client's delayed ACK (40 ms a request).
    handler.disable_nagle_algorithm = True
    handler.send_header = keep_alive_send_header
    handler.make_environ = delimited_environ
    handler.run_wsgi = keep_alive_run_wsgi


def main() -> None:
    import moto

    if os.environ.get("TRAWL_EMULATOR_PLAIN") == "1":
        # moto as `moto_server` runs it: to tell a patch's fault from moto's own
        print(f"trawl: moto {moto.__version__}, unpatched (TRAWL_EMULATOR_PLAIN=1)", file=sys.stderr)
    elif moto.__version__ == PATCHED_VERSION:
        _patch()
        print(f"trawl: moto {moto.__version__}, patched (cli/moto-server.py)", file=sys.stderr)
    else:
        print(f"trawl: moto {moto.__version__}, unpatched (the patches are for {PATCHED_VERSION})", file=sys.stderr)
    sys.stderr.flush()
    import moto.server
    from moto.server import main as moto_main

    # At SIGTERM/SIGINT moto's own handler raises SystemExit, and the interpreter then winds down
    # its threads and modules: 1.2 s a stop. The state is in memory only, saved by the CLI before
    # it stops the server, so there is nothing to wind down.
    def exit_now(signum: int, frame: object) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    moto.server.signal_handler = exit_now

    sys.argv = ["moto_server", *sys.argv[1:]]
    moto_main()


if __name__ == "__main__":
    main()
