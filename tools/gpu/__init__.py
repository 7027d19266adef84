"""The GPU kit: `prepare` builds it here, `device_run` runs it on a lent GPU machine,
`rehearse` runs both on this machine (docs/gpu.md). The entry scripts are in packaging/gpu/."""
