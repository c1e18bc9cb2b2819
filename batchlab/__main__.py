"""``python -m batchlab``: print what this machine can measure."""

from __future__ import annotations


def main() -> None:
    from .environment import environment

    print(environment())


if __name__ == "__main__":
    main()
