"""Start-up at the default settings (ONNX int8 MiniLM, the guarded decision) does not import torch: a fresh interpreter
creates the app, runs its lifespan until the index is ready, and lists the heavy modules it loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import asyncio, json, sys
from service.app import create_app
from service.settings import Settings

async def main():
    app = create_app(Settings(data_dir=sys.argv[1], namespace_secret="s", admin_token="t"))
    async with app.router.lifespan_context(app):
        ready = await asyncio.to_thread(app.state.runtime.ready.wait, 120)
        loaded = [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules]
        print(json.dumps({"ready": ready, "embedder": app.state.runtime.settings.embedder, "loaded": loaded}))

asyncio.run(main())
"""


def test_the_default_app_starts_without_importing_torch(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEJA_")} | {"HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"ready": True, "embedder": "onnx", "loaded": []}
