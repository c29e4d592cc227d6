"""One exception type for everything the library reports."""
from . import _native


class FgemmaError(Exception):
    """A failed fgemma call: `status` is the C API's fgemma_status code, `status_name` its name in
    words (fgemma_status_name: "not found"), `message` the library's own (it names the file or field)."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = _native.lib().fgemma_status_name(self.status).decode()
        self.message = message
        super().__init__(message)


def check(status):
    """Raises FgemmaError for a non-zero status, with this thread's last error message."""
    if status != 0:
        raise FgemmaError(status, _native.lib().fgemma_last_error().decode("utf-8", "replace"))


def check_length(n):
    """For calls returning a length or -status."""
    if n < 0:
        check(-n)
    return n
