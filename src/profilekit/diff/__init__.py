"""What changes between two stacks, key by key and in the rendered command line and env; its text and JSON; and
the change of every stack when `lock`/`update` move a source."""
