"""Protocol-faithful stand-ins for the wire tests: a recorded-traffic upstream server
(:mod:`tests.standins.upstream`), loaders for the corpus recording formats
(:mod:`tests.standins.recordings`) and a runner for the real gateway server
(:mod:`tests.standins.servers`)."""
