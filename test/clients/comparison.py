"""Results of a client compared with the truth, for the client scripts:
compare() runs both sides (an error becomes ("error", SQLSTATE)), report()
prints "checked=N mismatches=M errors=E" and the first mismatches."""
import psycopg


class Comparison:
    def __init__(self):
        self.checked = self.mismatches = self.errors = 0
        self.shown = []

    @staticmethod
    def _run(fn):
        try:
            return fn()
        except psycopg.Error as e:
            return ("error", e.sqlstate)

    def compare(self, what, got_fn, want_fn):
        got, want = self._run(got_fn), self._run(want_fn)
        self.checked += 1
        if got != want:
            self.mismatches += 1
            if len(self.shown) < 3:
                self.shown.append(f"{what}: got {got!r} want {want!r}")
        if isinstance(got, tuple):
            self.errors += 1

    def report(self):
        print(f"checked={self.checked} mismatches={self.mismatches} errors={self.errors}")
        for line in self.shown:
            print(line)
