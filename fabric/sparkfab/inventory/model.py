"""The inventory's model: frozen pydantic models that forbid unknown keys, with the bounds and
forms every value must have. What the values mean together (cabling, subnets, rings) is
checked by `sparkfab.resolve`."""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from sparkfab import spark
from sparkfab.engines.recipes import MODEL

Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=63)]
CLUSTER_PATTERN = r"^[a-z0-9][a-z0-9-]{0,19}$"
ClusterName = Annotated[str, StringConstraints(pattern=CLUSTER_PATTERN)]
IfName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,15}$")]
EndRef = Annotated[str, StringConstraints(pattern=r"^[^:\s]+:[^:\s]+$")]


def _no_bool(v: Any) -> Any:
    """YAML 1.1 reads yes/no/true as booleans, and pydantic would take True as 1."""
    if isinstance(v, bool):
        raise ValueError(f"{str(v).lower()} is not a whole number (quote it if it is a name)")
    return v


#: a whole number as written (not a boolean that pydantic would read as 0 or 1); after the
#: bounds in each Annotated, so that the JSON schema keeps "minimum" and "maximum"
_NO_BOOL = BeforeValidator(_no_bool)
Mtu = Annotated[int, Field(ge=1280, le=9216), _NO_BOOL]
LinkSpeed = spark.LinkSpeed


def _as_str(v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


_PRIVATE = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))


def _private(net: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
    if not any(net.subnet_of(p) for p in _PRIVATE):
        raise ValueError(
            f"{net} is not a private range: fabric subnets live inside 10.0.0.0/8, 172.16.0.0/12, "
            "192.168.0.0/16 or 100.64.0.0/10"
        )
    return net


def hostname(v: str) -> str:
    """An IP address or a DNS name (RFC 1123 labels, an absolute name's final dot allowed),
    nothing a shell, ssh or an env file would read as more. An IPv6 scope is an interface name:
    Python's own parser takes any characters there but `/` and `%`."""
    try:
        addr = ipaddress.ip_address(v)
    except ValueError:
        if not _HOSTNAME.match(v):
            raise ValueError(f"{v!r} is neither an IP address nor a host name") from None
        return v
    if addr.is_unspecified or addr.is_multicast or (addr.version == 4 and addr.is_reserved):
        # 0.0.0.0, ::, 224/4, ff00::/8, 240/4 and the broadcast: no host answers ssh there
        raise ValueError(f"{v!r} is not the address of one host (unspecified, multicast or broadcast)")
    scope = getattr(addr, "scope_id", None)
    if scope is not None and not _SCOPE.match(scope):
        raise ValueError(f"{v!r}: an IPv6 scope is an interface name ([A-Za-z0-9_.:-], at most 15)")
    return v


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,254}}\Z){_LABEL}(\.{_LABEL})*\.?\Z")
_SCOPE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}\Z")


def _cidr_text(v: Any) -> Any:
    """A subnet as written, `A.B.C.D/N`: Python's network type also takes a number (a boolean
    among them, which YAML makes of yes/true) or a pair, and would read `true` as 0.0.0.1/32."""
    if isinstance(v, ipaddress.IPv4Network):
        return v
    if not isinstance(v, str):
        shown = str(v).lower() if isinstance(v, bool) else repr(v)
        raise ValueError(f"{shown} is not a subnet: write it as A.B.C.D/N")
    return v


Subnet = Annotated[ipaddress.IPv4Network, BeforeValidator(_cidr_text), AfterValidator(_private)]
#: A Unix port an engine may listen on: unprivileged (not sshd's 22), below the top one
Port = Annotated[int, Field(ge=1024, le=65535), _NO_BOOL]
#: Environment names and values as both `docker --env-file` and a shell take them literally.
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
EnvValue = Annotated[str, StringConstraints(pattern=r"^[^\n\r\x00]*$", max_length=4096), BeforeValidator(_as_str)]
FlagName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
FlagValue = str | int | float | bool | None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostVars(Strict):
    """Per-host keys sparkfab reads; `ansible_*` keys pass through to Ansible untouched."""

    ansible_host: Annotated[str, AfterValidator(hostname)] | None = None
    rank: Annotated[int, Field(ge=0), _NO_BOOL] | None = None
    mgmt_if: IfName = spark.DEFAULT_MGMT_IF
    ansible: dict[str, Any] = Field(default_factory=dict, exclude=True)


class SwitchBlock(Strict):
    model_config = ConfigDict(title="Switch")  # the schema's name for it
    model: Literal["CRS804", "CRS812", "generic"]
    ports: Annotated[int, Field(ge=1, le=512), _NO_BOOL] | None = None
    speed: Literal[100, 200, 400, 800] | None = None
    subnets: list[Subnet] | None = None
    #: the switch's operating system, which names its ports (default: the model's; `switches.profiles`)
    os: Literal["routeros", "cumulus", "sonic", "generic"] | None = None
    #: the system name it announces over LLDP, where that is not its key here (RouterOS: its identity)
    lldp_name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=63)] | None = None


class CableBlock(Strict):
    model_config = ConfigDict(title="Cable")  # the schema's name for it
    ends: list[EndRef]
    subnets: list[Subnet] | None = None

    @field_validator("ends")
    @classmethod
    def _two_ends(cls, v: list[str]) -> list[str]:
        if len(v) != 2:
            raise ValueError(f"a cable has two ends, this one lists {len(v)}")
        return v


def _cable_form(v: Any) -> Any:
    return {"ends": v} if isinstance(v, list) else v


class InstanceBlock(Strict):
    model_config = ConfigDict(title="Instance")  # the schema's name for it
    hosts: Annotated[list[Name], Field(min_length=1)]
    tp: Annotated[int, Field(ge=1), _NO_BOOL]
    launcher: str | None = None
    head: Name | None = None
    backend: Literal["mp", "ray"] | None = None
    runtime: Literal["docker", "process"] | None = None
    port: Port = 8000
    flags: dict[FlagName, FlagValue] = Field(default_factory=dict)
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    #: the checkpoint: a Hugging Face id (org/name) or an absolute path in the container (default: the recipe's)
    model: Annotated[str, StringConstraints(pattern=MODEL.pattern)] | None = None
    #: more env names read from the host's /etc/sparkfab/secrets.env (HF_TOKEN and VLLM_API_KEY always are)
    secrets: list[EnvName] = Field(default_factory=list)
    #: the host directory mounted as the container's Hugging Face cache (default /root/.cache/huggingface)
    hf_cache: Annotated[str, StringConstraints(pattern=r"^/[^\s:,]*$")] | None = None

    @field_validator("flags")
    @classmethod
    def _one_line(cls, v: dict[str, FlagValue]) -> dict[str, FlagValue]:
        for key, value in v.items():
            if isinstance(value, str) and any(c in value for c in "\n\r\x00"):
                raise ValueError(f"flag '{key}' has a line break or NUL in its value")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"flag '{key}' is {value}")
        return v


class ExporterBlock(Strict):
    """The fabric exporter on every Spark (`sparkfab exporter start|stop`)."""

    model_config = ConfigDict(title="Exporter")  # the schema's name for it

    port: Port = 9465
    #: how often its loop reads every byte counter (the peaks are rates over one interval)
    interval_ms: Annotated[float, Field(ge=0.1, le=1000, allow_inf_nan=False), _NO_BOOL] = 1.0
    #: how far back the peak gauges look (a scrape interval or more)
    peak_window_s: Annotated[int, Field(ge=1, le=3600), _NO_BOOL] = 15


def _exporter_form(v: Any) -> Any:
    """`exporter: true` asks for the defaults, `exporter: false` (or none) for no exporter: only an
    ExporterBlock or None is ever kept (the schema says that booleans are written)."""
    if v is True:
        return {}
    if v is False:
        return None
    return v


def _booleans_too(schema: dict[str, Any]) -> None:
    """The JSON schema of a key that also takes true or false (`_exporter_form` reads them)."""
    schema["anyOf"] = [*schema.get("anyOf", []), {"type": "boolean"}]


#: a directory on every Spark: absolute, or under the login's home (`~/`), without characters a
#: shell would read (it is written into the commands `verify --perf` runs on each rank)
ToolDir = Annotated[str, StringConstraints(pattern=r"^(~/|/)[A-Za-z0-9_./+-]*$", max_length=255)]


class PerfToolsBlock(Strict):
    """Where NCCL and nccl-tests live on every Spark (`verify --perf`): NVIDIA's DGX Spark playbook
    builds them under the login's home, and runs the binary by its path with NCCL's library path."""

    model_config = ConfigDict(title="PerfTools")  # the schema's name for it

    nccl_tests: ToolDir = "~/nccl-tests/build"
    nccl: ToolDir = "~/nccl/build"
    #: all_reduce_perf's pass mark in Gb/s of bus bandwidth (default: the link-speed mode's,
    #: `spark.SPEEDS`: healthy clusters' measured range less a margin)
    busbw_min_gbps: Annotated[float, Field(gt=0, le=1000), _NO_BOOL] | None = None


class Sparkfab(Strict):
    cluster: ClusterName
    #: the inventory group whose hosts are the cluster (default: the hosts that carry this block)
    group: Name | None = None
    link_speed: Annotated[LinkSpeed, BeforeValidator(_as_str)] = "200"
    mtu: Mtu = 9000
    subnet_pool: Subnet = ipaddress.IPv4Network("192.168.96.0/20")
    rail_prefix: Annotated[int, Field(ge=8, le=30), _NO_BOOL] = 24
    control_plane: Literal["management", "fabric"] = "management"
    nccl_version: Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = "2.30.7"
    nccl_graph: bool | None = None  # default: on for switchless rings (the 4-ring write-up's recipe)
    nccl_channels: Annotated[int, Field(ge=1, le=64), _NO_BOOL] = 8
    master_port: Annotated[int, Field(ge=1024, le=65534), _NO_BOOL] = 29501  # + 1: verify --collective
    netplan_renderer: Literal["networkd", "NetworkManager"] = "networkd"
    switches: dict[Name, SwitchBlock] = Field(default_factory=dict)
    cables: list[Annotated[CableBlock, BeforeValidator(_cable_form)]] = Field(default_factory=list)
    instances: dict[Name, InstanceBlock] = Field(default_factory=dict)
    #: where `verify --perf` finds nccl-tests and the NCCL it was built against, on every Spark
    perf_tools: PerfToolsBlock = Field(default_factory=PerfToolsBlock)
    #: a fabric exporter for Prometheus on every Spark (true: its defaults)
    exporter: Annotated[ExporterBlock | None, BeforeValidator(_exporter_form)] = Field(
        default=None, json_schema_extra=_booleans_too
    )


class Inventory(Strict):
    hosts: dict[Name, HostVars]
    sparkfab: Sparkfab
    group_vars: dict[str, Any] = Field(default_factory=dict)
    #: the user's groups of the cluster's hosts (an inventory Ansible read), kept for --limit
    groups: dict[str, list[str]] = Field(default_factory=dict)
    #: the inventory's hosts outside the cluster (not planned, rendered or touched)
    left_out: list[str] = Field(default_factory=list)
    source: str = ""


def model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that holds the value at a pydantic error's location (None: a plain mapping)."""
    model: type[BaseModel] | None = Inventory
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int) or (isinstance(part, str) and part.startswith("function-")):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            # a dict key (host name, switch name, instance name): keep the value model
            continue
        model = _inner_model(field.annotation)
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found:
            return found
    meta = getattr(annotation, "__origin__", None)
    return _inner_model(meta) if meta is not None and meta is not annotation else None
