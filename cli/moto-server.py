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
- SQS: a message's `visible` and `delayed` read the clock through naive datetime arithmetic
  (~10 µs each); `time.time()` gives the same number, and the visible messages a receive walks
  through are found with one clock read.
- werkzeug's access log (a line per request, never rotated) is off; errors are still logged.
"""

import functools
import logging
import os
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

    _patch_sqs()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)


def _patch_sqs() -> None:
    import moto.sqs.models as sqs_models

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
    from moto.server import main as moto_main

    sys.argv = ["moto_server", *sys.argv[1:]]
    moto_main()


if __name__ == "__main__":
    main()
