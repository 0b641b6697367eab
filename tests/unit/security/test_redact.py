from squall.security import REDACTED, is_secret_key, redact, user_for_token


def test_secret_keys_are_the_documented_patterns():
    for key in ("storm.zookeeper.auth.payload", "redis.password", "squall.auth.token",
                "nimbus.auth.tokens", "squall.tls.key", "squall.transport.zmq.keys.dir"):
        assert is_secret_key(key), key
    for key in ("topology.workers", "storm.zookeeper.auth.scheme", "ui.port", "squall.tls.cert",
                "topology.state.provider.config"):
        assert not is_secret_key(key), key


def test_redact_replaces_secrets_at_every_depth_and_keeps_the_rest():
    conf = {"squall.auth.token": "s3cret", "topology.workers": 2,
            "topology.state.provider.config": {"host": "h", "password": "pw"},
            "nimbus.auth.tokens": {"t1": "alice"}, "squall.tls.key": None}
    shown = redact(conf)
    assert shown["squall.auth.token"] == REDACTED
    assert shown["nimbus.auth.tokens"] == REDACTED
    assert shown["topology.state.provider.config"] == {"host": "h", "password": REDACTED}
    assert shown["topology.workers"] == 2 and shown["squall.tls.key"] is None
    assert conf["squall.auth.token"] == "s3cret"       # the original is untouched


def test_user_for_token():
    conf = {"nimbus.auth.tokens": {"t-alice": "alice", "t-bob": "bob"}}
    assert user_for_token(conf, "t-bob") == "bob"
    assert user_for_token(conf, "t-eve") is None
    assert user_for_token(conf, None) is None
    assert user_for_token({}, "t-bob") is None


def test_scrubber_hides_secret_values_inside_texts():
    from squall.security import scrubber
    conf = {"redis.password": "hunter22", "nimbus.auth.tokens": {"tok-alice-1": "alice"},
            "topology.workers": 2, "app.db": {"password": "pw-nested", "host": "db1"},
            "squall.auth.token": "abc"}             # too short to scrub safely
    scrub = scrubber(conf)
    text = "cannot connect to redis://:hunter22@db1 as tok-alice-1 with pw-nested (abc)"
    assert scrub(text) == f"cannot connect to redis://:{REDACTED}@db1 as {REDACTED} with " \
                          f"{REDACTED} (abc)"
    assert scrubber({"topology.workers": 2})("hunter22") == "hunter22"


def test_component_errors_are_reported_without_the_confs_secrets():
    from squall.runtime.errors import ErrorLog
    errors = ErrorLog({"redis.password": "hunter22"})
    errors.record("bolt", 3, ValueError("auth failed for password hunter22"), "h", 1)
    (entry,) = errors.drain()
    assert "hunter22" not in entry["error"] and REDACTED in entry["error"]
