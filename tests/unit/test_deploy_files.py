"""The deployment files agree with the code: docker-compose.yml and the Dockerfile against `Settings`,
`deja serve`, scripts/install.sh and each other. No Docker needed: both files are parsed, not run."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import typer
import yaml

from service.cli import app as cli_app
from service.settings import Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
INSTALL_SCRIPT = REPO / "scripts" / "install.sh"

# ----------------------------------------------------------------------------------------------------------
# Reading the files (tests/integration/test_compose.py uses these too)


class MissingVariable(ValueError):
    """A `${NAME:?message}` in the compose file whose variable the host environment does not set."""


_INTERPOLATION = re.compile(r"\$(?:\$|\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\})")


def interpolate(value: str, host_env: Mapping[str, str]) -> str:
    """Compose's `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`, `$$`."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match["name"], match["op"] or "", match["arg"] or ""
        given = host_env.get(name)
        if given is not None and not (given == "" and op.startswith(":")):
            return given
        if op.endswith("?"):
            raise MissingVariable(f"{name}: {arg}")
        return arg if op.endswith("-") else ""

    return _INTERPOLATION.sub(substitute, value)


@cache
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def gateway_command() -> list[str]:
    command = services()["gateway"]["command"]
    return shlex.split(command) if isinstance(command, str) else [str(arg) for arg in command]


def gateway_environment(host_env: Mapping[str, str]) -> dict[str, str]:
    """The gateway's environment as compose would pass it, with `host_env` as the shell's variables."""
    environment = services()["gateway"]["environment"]
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {name: interpolate("" if value is None else str(value), host_env) for name, value in environment.items()}


def option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction, continuation lines joined and comments dropped."""

    keyword: str
    args: str
    stage: int

    def exec_form(self) -> list[str]:
        parsed: list[str] = json.loads(self.args)
        return parsed


@cache
def dockerfile() -> tuple[Instruction, ...]:
    instructions: list[Instruction] = []
    stage, pending = -1, ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.strip().startswith("#") or not (pending or line.strip()):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        keyword, _, args = (pending + line).strip().partition(" ")
        pending = ""
        stage += keyword.upper() == "FROM"
        instructions.append(Instruction(keyword.upper(), args.strip(), stage))
    return tuple(instructions)


def final_stage() -> list[Instruction]:
    last = dockerfile()[-1].stage
    return [ins for ins in dockerfile() if ins.stage == last]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for ins in final_stage():
        if ins.keyword == "ENV":
            env |= dict(token.split("=", 1) for token in shlex.split(ins.args))
    return env


_PIP_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-c", "--constraint", "-r", "--requirement",
                      "-f", "--find-links"}


@dataclass(frozen=True)
class PipInstall:
    """What one `pip install` command installs, and from which index."""

    targets: tuple[str, ...]
    index_url: str | None

    @property
    def torch_pins(self) -> list[str]:
        return [t for t in self.targets if re.fullmatch(r"torch(\[.*\])?==\S+", t)]

    @property
    def installs_project(self) -> bool:
        return any(t in (".", "-e .") or t.startswith(".[") or re.fullmatch(r"\S*/deja-\S+\.whl", t)
                   for t in self.targets)


def pip_installs(shell_commands: list[str]) -> list[PipInstall]:
    """Every `pip install` in `shell_commands`, in order (`&&`-chains split; `python -m pip` and `pip` alike)."""
    found: list[PipInstall] = []
    for command in shell_commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        for i, token in enumerate(tokens[:-1]):
            if (token == "pip" or token.endswith("/pip")) and tokens[i + 1] == "install":
                end = next((j for j in range(i + 2, len(tokens)) if tokens[j] in ("&&", "||", ";", "|")), None)
                found.append(_pip_install(tokens[i + 2:end]))
    return found


def _pip_install(args: list[str]) -> PipInstall:
    targets: list[str] = []
    index_url = None
    words = iter(args)
    for word in words:
        if word in (">", ">>"):  # a redirection: its file is no target, nor the stream number before it
            next(words)
            targets = targets[:-1] if targets and targets[-1].isdigit() else targets
        elif word in _PIP_VALUE_OPTIONS:
            value = next(words)
            index_url = value if word in ("-i", "--index-url") else index_url
            targets += [f"-r {value}"] if word in ("-r", "--requirement") else []
        elif not word.startswith("-"):
            targets.append(word)
    return PipInstall(tuple(targets), index_url)


def install_script_commands() -> list[str]:
    """The script's commands, comments dropped and continuation lines joined."""
    lines = [line for line in INSTALL_SCRIPT.read_text().splitlines() if not line.lstrip().startswith("#")]
    return "\n".join(lines).replace("\\\n", " ").splitlines()


def dockerfile_run_commands() -> list[str]:
    return [ins.args for ins in dockerfile() if ins.keyword == "RUN"]


def pyproject_dependencies() -> list[str]:
    dependencies: list[str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return dependencies


# ----------------------------------------------------------------------------------------------------------
# docker-compose.yml


@pytest.mark.parametrize(("text", "host_env", "expected"), [
    pytest.param("${A:-d}", {}, "d", id="unset-takes-default"),
    pytest.param("${A:-d}", {"A": ""}, "d", id="empty-takes-colon-default"),
    pytest.param("${A-d}", {"A": ""}, "", id="empty-keeps-empty-without-colon"),
    pytest.param("x${A}y", {"A": "1"}, "x1y", id="set"),
    pytest.param("${A}", {}, "", id="unset-is-empty"),
    pytest.param("$${A}", {"A": "1"}, "${A}", id="dollar-escape"),
])
def test_interpolation_follows_compose(text: str, host_env: dict[str, str], expected: str) -> None:
    assert interpolate(text, host_env) == expected


def test_required_variable_missing_or_empty_is_an_error() -> None:
    for host_env in ({}, {"A": ""}):
        with pytest.raises(MissingVariable, match="A: say so"):
            interpolate("${A:?say so}", host_env)


def test_every_deja_variable_in_the_deploy_files_and_their_docs_is_a_setting() -> None:
    # Environment keys, `${...}` interpolations, ENV lines and the operations guide alike.
    texts = [COMPOSE.read_text(), DOCKERFILE.read_text(), (REPO / "docs" / "operations.md").read_text()]
    deja_names = set(re.findall(r"\bDEJA_\w+", "\n".join(texts)))
    unknown = sorted(n for n in deja_names if n.removeprefix("DEJA_").lower() not in Settings.model_fields)
    assert deja_names and unknown == []


def test_compose_environment_is_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("DEJA_")]:
        monkeypatch.delenv(name)
    for name, value in gateway_environment({"DEJA_NAMESPACE_SECRET": "s" * 64}).items():
        monkeypatch.setenv(name, value)

    settings = Settings()

    assert settings.sql_url == "postgresql+psycopg2://deja:deja@postgres:5432/deja"
    assert settings.redis_url == "redis://redis:6379/0"
    assert settings.data_dir == Path("/data")
    assert settings.secret_bytes() == b"s" * 64
    assert settings.upstream_url == Settings.model_fields["upstream_url"].default
    assert not settings.admin_token  # unset on the host: the admin endpoints stay disabled


def test_compose_refuses_to_start_without_a_namespace_secret() -> None:
    with pytest.raises(MissingVariable, match="DEJA_NAMESPACE_SECRET"):
        gateway_environment({})


def test_compose_urls_point_at_the_compose_services() -> None:
    env = gateway_environment({"DEJA_NAMESPACE_SECRET": "s"})
    assert urlsplit(env["DEJA_DATABASE_URL"]).hostname in services()
    assert urlsplit(env["DEJA_REDIS_URL"]).hostname in services()
    postgres = services()["postgres"]["environment"]
    database = urlsplit(env["DEJA_DATABASE_URL"])
    assert (database.username, database.password, database.path) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], "/" + postgres["POSTGRES_DB"])


def test_images_are_the_pinned_majors() -> None:
    assert services()["postgres"]["image"] == "postgres:16-alpine"
    assert services()["redis"]["image"] == "redis:7-alpine"
    assert services()["gateway"]["build"] in (".", {"context": ".", "dockerfile": "Dockerfile"})


def test_gateway_command_is_a_valid_deja_serve() -> None:
    args = gateway_command()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert args[:2] == ["deja", "serve"] and scripts["deja"] == "service.cli:app"

    group = typer.main.get_command(cli_app)
    params = group.commands["serve"].make_context("serve", args[2:]).params  # type: ignore[attr-defined]

    assert params["host"] == "0.0.0.0"  # reachable from outside the container


def test_published_port_exposed_port_and_healthchecks_match_the_serve_port() -> None:
    port = option(gateway_command(), "--port")
    published = [str(p).rsplit(":", 1) for p in services()["gateway"]["ports"]]
    exposed = [ins.args for ins in final_stage() if ins.keyword == "EXPOSE"]
    healthchecks = [" ".join(services()["gateway"]["healthcheck"]["test"]),
                    *(ins.args for ins in final_stage() if ins.keyword == "HEALTHCHECK")]

    assert [container for _host, container in published] == [port]
    assert exposed == [port]
    assert all(f"127.0.0.1:{port}/readyz" in check for check in healthchecks)


def test_healthz_and_readyz_are_routes_of_the_app() -> None:
    from service.app import create_app

    paths = {getattr(route, "path", None) for route in create_app(Settings()).routes}
    assert {"/healthz", "/readyz"} <= paths


@pytest.mark.parametrize("name", ["gateway", "postgres", "redis"])
def test_service_has_a_healthcheck_and_a_restart_policy(name: str) -> None:
    service = services()[name]
    test = service["healthcheck"]["test"]
    assert test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1
    assert service["restart"] in ("unless-stopped", "always")


def test_gateway_waits_for_every_other_service_to_be_healthy() -> None:
    others = set(services()) - {"gateway"}
    assert services()["gateway"]["depends_on"] == {name: {"condition": "service_healthy"} for name in others}


def test_stateful_paths_are_named_volumes() -> None:
    declared = set(compose()["volumes"])
    mounts = {name: [str(v).split(":") for v in service.get("volumes", [])] for name, service in services().items()}
    data_dir = gateway_environment({"DEJA_NAMESPACE_SECRET": "s"})["DEJA_DATA_DIR"]

    assert [data_dir] == [target for _volume, target in mounts["gateway"]]
    assert [target for _volume, target in mounts["postgres"]] == ["/var/lib/postgresql/data"]
    assert all(volume in declared for targets in mounts.values() for volume, _target in targets)


# ----------------------------------------------------------------------------------------------------------
# Dockerfile


def test_dockerfile_cmd_equals_the_compose_command() -> None:
    (cmd,) = [ins for ins in final_stage() if ins.keyword == "CMD"]
    assert cmd.exec_form() == gateway_command()


def test_image_is_python_slim_non_root_and_offline() -> None:
    bases = [ins.args.split()[0] for ins in dockerfile() if ins.keyword == "FROM"]
    users = [ins.args for ins in final_stage() if ins.keyword == "USER"]

    assert set(bases) == {"python:3.11-slim"}
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert dockerfile_env()["HF_HUB_OFFLINE"] == "1"
    assert dockerfile_env()["DEJA_DATA_DIR"] == gateway_environment({"DEJA_NAMESPACE_SECRET": "s"})["DEJA_DATA_DIR"]
    assert [ins for ins in final_stage() if ins.keyword == "HEALTHCHECK"]


HEAVY = ("torch", "sentence-transformers", "transformers", "scikit-learn", "scipy", "matplotlib")


def test_the_product_depends_on_no_deep_learning_framework() -> None:
    named = {re.split(r"[\s\[<>=!~;]", dep, maxsplit=1)[0].lower() for dep in pyproject_dependencies()}
    assert named and not named & set(HEAVY)


def test_the_image_installs_the_product_lock_then_the_wheel_and_no_torch() -> None:
    steps = pip_installs(dockerfile_run_commands())
    targets = [step.targets for step in steps if step.targets and step.targets != ("pip",)]
    assert targets[:2] == [("-r requirements/product.lock.txt",), ("/tmp/dist/deja-0.1.0-py3-none-any.whl",)]
    assert steps[-1].installs_project and all(not s.torch_pins and s.index_url is None for s in steps)
    assert not [t for step in steps for t in step.targets if t.split("==")[0] in HEAVY]


def test_the_install_script_installs_torch_from_its_lock_before_the_project() -> None:
    """Only with --dev: the lock's torch line (CPU build, hash) alone, from a local wheel folder or PyTorch's CPU
    index (PyPI has only the CUDA build); then the lock, then the project without resolving anything."""
    steps = pip_installs(install_script_commands())
    torch_steps = [s for s in steps if s.targets == ("-r $torch_lock",)]
    assert [s.index_url for s in torch_steps] == [None, "https://download.pytorch.org/whl/cpu"]
    order = [i for i, s in enumerate(steps) if s in torch_steps or s.installs_project]
    assert order == sorted(order) and steps[order[-1]].installs_project


def test_the_wheel_carries_every_data_file_the_product_reads() -> None:
    """pyproject's package data covers every non-Python file under the packages (migrations, the WordNet table,
    the tokenizer, the label page): a wheel installed in an empty folder reads them all."""
    import fnmatch

    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    missing = []
    for package in ("index", "service", "eval"):
        for path in (REPO / package).rglob("*"):
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                relative = path.relative_to(REPO / package).as_posix()
                if not any(fnmatch.fnmatch(relative, pattern) for pattern in package_data.get(package, [])):
                    missing.append(f"{package}/{relative}")
    assert missing == []


def test_dockerignore_keeps_the_venv_git_and_caches_out() -> None:
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", ".deja", "**/__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"} <= ignored
