"""The deployment table: which deployments are enabled, what model names resolve to, and
each deployment's key, price and provenance.

Built once at start-up from :class:`gateway.config.GatewayConfig` and the environment
(through :class:`gateway.config.Settings`): a deployment naming ``api_key_env`` is enabled
only when that variable is set; ``demo`` deployments need no key. Nothing here is done per
request except dictionary lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.config import Deployment, GatewayConfig, Price, Settings
from gateway.errors import ModelNotFound
from gateway.schema import Provenance


@dataclass
class DeploymentTable:
    """Enabled deployments by name, aliases to ordered deployment lists, keys and prices.

    ``disabled`` maps a configured-but-disabled deployment to the reason (e.g. the missing
    key variable), for ``GET /v1/models`` and ``/health``; ``disabled_aliases`` an alias none
    of whose deployments is enabled to what would enable it (``"set OPENAI_API_KEY"``).
    ``remedies`` maps every name a client may send for something disabled (alias, deployment
    name, upstream model id) to that remedy, so a request for it is told what to set instead
    of that the model does not exist.
    """

    deployments: dict[str, Deployment] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    keys: dict[str, str | None] = field(default_factory=dict)
    prices: dict[str, Price] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)
    disabled_aliases: dict[str, str] = field(default_factory=dict)
    remedies: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls, config: GatewayConfig, settings: Settings, *, resolve_prices: bool = True
    ) -> DeploymentTable:
        """Enable each configured deployment whose key is present; resolve its price from
        the bundled litellm table plus overrides (USD per million tokens). An alias lists its
        enabled deployments; the ``demo`` stand-in among them only when none of the others is
        enabled (a keyless gateway answers, a real deployment's failure is never papered over
        by the stand-in's fake answer)."""
        table = cls()
        missing: dict[str, list[str]] = {}  # deployment name or upstream model id -> key variables
        for dep in config.deployments:
            key = settings.read_key(dep.api_key_env) if dep.api_key_env else None
            if dep.api_key_env and key is None and dep.api != "demo":
                table.disabled[dep.name] = f"environment variable {dep.api_key_env} is not set"
                for name in (dep.name, dep.model):
                    if dep.api_key_env not in missing.setdefault(name, []):
                        missing[name].append(dep.api_key_env)
                continue
            table.deployments[dep.name] = dep
            table.keys[dep.name] = key
            if resolve_prices:
                from gateway.providers.catalog import resolve_price

                table.prices[dep.name] = resolve_price(dep)
            else:
                table.prices[dep.name] = dep.price or Price()
        for alias in config.models:
            enabled = [d for d in alias.deployments if d in table.deployments]
            real = [d for d in enabled if table.deployments[d].api != "demo"]
            if real:
                enabled = real  # the demo stand-in never answers for a real deployment that failed
            if enabled:
                table.aliases[alias.name] = enabled
            else:
                variables = list(dict.fromkeys(v for d in alias.deployments for v in missing.get(d, [])))
                table.disabled_aliases[alias.name] = (
                    f"set {' or '.join(variables)}"
                    if variables
                    else f"none of its deployments ({', '.join(alias.deployments)}) is enabled"
                )
        for name, variables in missing.items():
            table.remedies.setdefault(name, f"set {' or '.join(variables)}")
        table.remedies.update(table.disabled_aliases)  # an alias's name wins over a model id
        return table

    def candidates(self, model: str) -> list[Deployment]:
        """Deployments that may serve ``model``, primary first.

        ``model`` may be an alias, a deployment name, or the upstream model id of exactly one
        enabled deployment. Raises :class:`ModelNotFound` (HTTP 404, param ``model``)
        otherwise: for a disabled one naming the key variable(s) that would enable it
        (``model 'gpt-4.1' is disabled: set OPENAI_API_KEY …``), else listing the names that
        would work.
        """
        if model in self.aliases:
            return [self.deployments[d] for d in self.aliases[model]]
        if model in self.deployments:
            return [self.deployments[model]]
        by_model = [d for d in self.deployments.values() if d.model == model]
        if by_model:
            return by_model
        remedy = self.remedies.get(model)
        if remedy is not None:
            if remedy.startswith("set "):
                remedy += " in the gateway's environment and restart it"
            raise ModelNotFound(f"model {model!r} is disabled: {remedy}", param="model")
        if model in self.disabled:
            raise ModelNotFound(
                f"model {model!r} is configured but disabled: {self.disabled[model]}", param="model"
            )
        known = sorted(set(self.aliases) | set(self.deployments))
        raise ModelNotFound(
            f"model {model!r} does not exist on this gateway; available: {', '.join(known) or 'none'}",
            param="model",
        )

    def models(self) -> list[dict[str, str]]:
        """Entries for ``GET /v1/models``: aliases then deployments, each with ``id``,
        ``owned_by`` and ``description`` (the demo deployment says it is a stand-in)."""
        out: list[dict[str, str]] = []
        for name, deps in self.aliases.items():
            out.append({"id": name, "owned_by": "turnstile", "description": f"alias of {', '.join(deps)}"})
        for dep in self.deployments.values():
            desc = dep.description or f"{dep.api} deployment of {dep.model}"
            if dep.api == "demo":
                desc = dep.description or "demo: a deterministic local stand-in, not a real model"
            out.append({"id": dep.name, "owned_by": dep.provider, "description": desc})
        return out


_PROVENANCE: dict[tuple[str, str, str], Provenance] = {}


def provenance_of(dep: Deployment) -> Provenance:
    """The provenance that thinking signed by ``dep`` carries (api, provider, model); one
    shared (frozen) object per distinct triple."""
    key = (dep.api, dep.provider, dep.model)
    prov = _PROVENANCE.get(key)
    if prov is None:
        if len(_PROVENANCE) > 4096:  # bounded: deployments are few; tests make many
            _PROVENANCE.clear()
        prov = _PROVENANCE[key] = Provenance(api=dep.api, provider=dep.provider, model=dep.model)
    return prov
