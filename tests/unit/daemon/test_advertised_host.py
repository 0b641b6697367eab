"""A supervisor's advertised host (``storm.local.hostname``, else the machine's name) is where
every other worker sends tuples to its workers: a name that does not resolve is refused when
the supervisor starts, and one its workers do not listen on (the transport's ``bind.host``) is
a warning. Either stalled the topology in silence, its spouts replaying."""
from __future__ import annotations

from pathlib import Path

import pytest

from squall import ConfigError
from squall.daemon.addresses import check_advertised_host
from squall.daemon.supervisor import Supervisor

FOREIGN = "203.0.113.9"       # TEST-NET-3: no interface of this machine


def test_a_name_that_does_not_resolve_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^storm.local.hostname 'no-such-host.invalid' does "
                                          r"not resolve \(.*\): workers of other supervisors "
                                          r"send tuples to this one's by that name; set "
                                          r"storm.local.hostname"):
        check_advertised_host({"storm.local.hostname": "no-such-host.invalid"},
                              "no-such-host.invalid")
    with pytest.raises(ConfigError, match=r"^this machine's host name 'x.invalid' "
                                          r"\(storm.local.hostname is not set\) does not "
                                          r"resolve"):
        check_advertised_host({}, "x.invalid")
    sup = Supervisor({"storm.local.dir": str(tmp_path / "local"), "squall.state": "memory",
                      "storm.local.hostname": "no-such-host.invalid"})
    with pytest.raises(ConfigError, match=r"^storm.local.hostname 'no-such-host.invalid' does "
                                          r"not resolve"):
        sup.start()
    sup.stop()


@pytest.mark.parametrize("transport", ["zmq", "grpc", "nng"])
def test_a_name_the_workers_do_not_listen_on_is_a_warning(transport: str) -> None:
    key = f"squall.transport.{transport}.bind.host"
    for host in (FOREIGN, "127.0.1.1"):     # another machine's; a loopback address not bound
        said = check_advertised_host({"squall.transport": transport, key: "127.0.0.1",
                                      "storm.local.hostname": host}, host)
        assert said.startswith(f"storm.local.hostname {host!r} resolves to {host}, but {key} "
                               f"is '127.0.0.1': this supervisor's workers listen on 127.0.0.1 "
                               f"only, so tuples sent to them by that name are not received"), \
            said
        assert f"set {key} to 0.0.0.0" in said
    said = check_advertised_host({key: "0.0.0.0", "squall.transport": transport}, FOREIGN)
    assert said.startswith(f"this machine's host name {FOREIGN!r} (storm.local.hostname is not "
                           f"set) resolves to {FOREIGN}, not an address of this machine")


@pytest.mark.parametrize("host,bind", [("localhost", "127.0.0.1"), ("127.0.0.1", "localhost"),
                                       ("127.0.0.1", "0.0.0.0"), ("localhost", "*"),
                                       ("127.0.1.1", "0.0.0.0")])
def test_a_name_the_workers_listen_on_is_fine(host: str, bind: str) -> None:
    assert check_advertised_host({"squall.transport.zmq.bind.host": bind}, host) == ""
    # a transport without a bind.host option: nothing to compare
    assert check_advertised_host({"squall.transport": "mine"}, host) == ""
