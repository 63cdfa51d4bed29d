"""Run the ``notify`` command as ``python -m notify_cli``."""

from notify_cli.main import main

if __name__ == "__main__":
    main()
