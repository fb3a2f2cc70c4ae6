"""The README's Python quick start runs as written."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    text = "\n".join(b for b in blocks if ">>>" in b)
    assert text.count(">>>") >= 10
    test = doctest.DocTestParser().get_doctest(text, {"tmp": tmp_path}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} README example(s) failed (see output)"
