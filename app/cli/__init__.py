"""The command line (docs/design.md has the contract): the parser, one module per command, their exit codes and
output. `app/main.py` parses and dispatches; with no command it opens the wizard (`app/cli/wizard.py`)."""
