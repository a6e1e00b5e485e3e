"""The README's "From Python" example, run as written."""

import gc
import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_python_example_runs():
    text = README.read_text()
    section = text[text.index("## From Python") :]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the README has a Python example"
    namespace = {"__name__": "readme"}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    namespace.clear()  # closes every handle the example made
    gc.collect()
