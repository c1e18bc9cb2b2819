"""``python -m batchlab``: print what this machine can measure."""

from __future__ import annotations

from batchlab.measuring.live import environment


def main() -> None:
    print(environment())


if __name__ == "__main__":
    main()
