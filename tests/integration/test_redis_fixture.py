import redis


def test_redis_conf_gives_a_live_isolated_server(redis_conf):
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"])
    try:
        client.set(redis_conf["key_prefix"] + "k", b"v")
        assert client.get(redis_conf["key_prefix"] + "k") == b"v"
    finally:
        client.close()
