"""The ``squall`` command line: the top layer, above :mod:`squall.daemon` and the runtime.

``main``     the parser, global options (``--config``, ``-c``, ``SQUALL_CONF``), one-line errors,
             ``plugins`` and ``config``; plugins add subcommands through ``squall_add_commands``.
``local``    ``squall local TARGET`` (targets are resolved by :mod:`squall.api.target`).
``demo``     ``squall demo``.
``cluster``  the daemons (``nimbus``, ``supervisor``, ``ui``, ``dev-zookeeper``) and the
             topology commands sent to nimbus (``submit``, ``list``, ``kill``, ...).
"""
