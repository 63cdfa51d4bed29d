"""notify_cli: the ``notify`` command line (click)."""
