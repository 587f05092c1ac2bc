"""Settings, read into a frozen ``Config``.

Layers, each overriding the one before: the commented defaults shipped in the package
(``default.toml``, which documents every setting), the user's ``config.toml`` (in
``$MEMORYD_HOME`` or the platform config dir), then ``MEMORYD_<SECTION>_<KEY>`` environment
variables.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from memoryd_client.paths import config_dir, socket_path, state_dir

from memoryd.errors import ConfigError


@dataclass(frozen=True)
class EmbedConfig:
    model: str
    threads: int
    batch_size: int
    batch_tokens: int
    max_tokens: int


@dataclass(frozen=True)
class RememberConfig:
    near_duplicate_cosine: float
    manual_confidence: float


@dataclass(frozen=True)
class SearchConfig:
    limit: int
    match_cosine: float
    keyword_weight: float
    vector_weight: float


@dataclass(frozen=True)
class Config:
    state_dir: Path
    socket_path: Path
    config_file: Path
    embed: EmbedConfig
    remember: RememberConfig
    search: SearchConfig

    @property
    def db_path(self) -> Path:
        return self.state_dir / "memoryd.db"

    @property
    def ledger_dir(self) -> Path:
        return self.state_dir / "ledger"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "memoryd.lock"


def _defaults() -> dict[str, Any]:
    text = resources.files("memoryd").joinpath("default.toml").read_text("utf-8")
    return tomllib.loads(text)


def _merge(base: dict[str, Any], layer: dict[str, Any], origin: str) -> None:
    for section, values in layer.items():
        if section not in base or not isinstance(values, dict):
            raise ConfigError(f"{origin}: unknown section [{section}]")
        for key, value in values.items():
            if key not in base[section]:
                raise ConfigError(f"{origin}: unknown setting {section}.{key}")
            expected = type(base[section][key])
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
                raise ConfigError(
                    f"{origin}: {section}.{key} must be {expected.__name__}, got {value!r}"
                )
            base[section][key] = value


def _env_layer(defaults: dict[str, Any]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for section, values in defaults.items():
        for key, default in values.items():
            raw = os.environ.get(f"MEMORYD_{section}_{key}".upper())
            if raw is None:
                continue
            try:
                value: Any = type(default)(raw) if not isinstance(default, str) else raw
            except ValueError:
                raise ConfigError(
                    f"MEMORYD_{section}_{key}".upper() + f"={raw!r} is not a {type(default).__name__}"
                ) from None
            layer.setdefault(section, {})[key] = value
    return layer


def load_config(path: Path | None = None) -> Config:
    """Read all layers; raises ConfigError with the file and setting at fault."""
    settings = _defaults()
    config_file = path or config_dir() / "config.toml"
    if config_file.exists():
        try:
            user = tomllib.loads(config_file.read_text("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
            raise ConfigError(f"{config_file}: {exc}") from None
        _merge(settings, user, str(config_file))
    _merge(settings, _env_layer(settings), "environment")
    return Config(
        state_dir=state_dir(),
        socket_path=socket_path(),
        config_file=config_file,
        embed=EmbedConfig(**settings["embed"]),
        remember=RememberConfig(**settings["remember"]),
        search=SearchConfig(**settings["search"]),
    )
