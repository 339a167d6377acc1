import sys

from tests.docs_examples.run import main

sys.exit(main())
