from collector.identity import default_job_name, detect, resource_ids, safe_name


def test_it_names_nodes_algo_i_from_torchrun():
    env = {
        "GROUP_RANK": "1",
        "RANK": "9",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "16",
        "GROUP_WORLD_SIZE": "2",
        "PROFILER_NODE_NAME": "ignored",
    }
    ident = detect(env, hostname="gpu-host-3", pid=77)
    assert ident.node == "algo-2"
    assert (ident.rank, ident.local_rank, ident.world_size, ident.node_count) == (9, 1, 16, 2)
    assert ident.hostname == "gpu-host-3"
    assert ident.pid == 77


def test_it_names_nodes_from_slurm():
    env = {
        "SLURM_NODEID": "0",
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "3",
        "SLURM_NTASKS": "8",
        "SLURM_NNODES": "2",
    }
    ident = detect(env, hostname="n001")
    assert ident.node == "algo-1"
    assert (ident.rank, ident.local_rank, ident.world_size, ident.node_count) == (3, 3, 8, 2)


def test_it_falls_back_to_the_variable_then_the_host_name():
    assert detect({"PROFILER_NODE_NAME": "trainer-a"}, hostname="h").node == "trainer-a"
    ident = detect({}, hostname="workstation")
    assert ident.node == "workstation"
    assert (ident.rank, ident.local_rank, ident.world_size) == (0, 0, 1)


def test_an_explicit_node_name_wins():
    assert detect({"GROUP_RANK": "0"}, node_name="mine", hostname="h").node == "mine"


def test_all_ranks_of_one_launch_agree_on_the_default_job_name(monkeypatch):
    monkeypatch.setattr("sys.argv", ["/src/train.py"])
    env = {"TORCHELASTIC_RUN_ID": "a1b2c3"}
    assert default_job_name(env) == "train-a1b2c3"
    assert default_job_name({"TORCHELASTIC_RUN_ID": "none", "SLURM_JOB_ID": "4711"}) == "train-4711"
    assert default_job_name({}, now=0).startswith("train-19")


def test_it_collects_launcher_ids_and_makes_names_file_safe():
    env = {"SLURM_JOB_ID": "4711", "TORCHELASTIC_RUN_ID": "none", "MASTER_ADDR": "10.0.0.1"}
    assert resource_ids(env) == {"slurm_job_id": "4711", "master_addr": "10.0.0.1"}
    assert safe_name("my job/run #1") == "my_job_run_1"
