"""A ReFrame configuration for one machine, local launcher: enough to run
membw_check.py on a workstation or in CI. Sites use their own system
definition instead; the tests take any system and environment."""

site_configuration = {
    "systems": [
        {
            "name": "local",
            "descr": "this machine",
            "hostnames": [".*"],
            "partitions": [
                {
                    "name": "default",
                    "scheduler": "local",
                    "launcher": "local",
                    "environs": ["builtin"],
                }
            ],
        }
    ],
    "environments": [{"name": "builtin"}],
}
