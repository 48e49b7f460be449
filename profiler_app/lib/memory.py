"""A memory ceiling for a worker process: past it, allocations fail with MemoryError (which
fails the part being parsed) instead of the machine swapping or the kernel killing a process."""

import resource


def limit_memory(megabytes: int) -> None:
    """Cap this process's data segment (heap and private mappings) at ``megabytes``; 0: no cap.
    Children it starts later (the parse's decoder processes) inherit the cap."""
    if megabytes <= 0:
        return
    limit = megabytes << 20
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
