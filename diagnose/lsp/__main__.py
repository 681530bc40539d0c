"""`python -m diagnose.lsp`: the language server over stdio."""

import sys

from diagnose.lsp import main

sys.exit(main())
