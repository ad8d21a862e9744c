"""Golden wire lines of every request: the object and the exact line it is encoded as."""

from __future__ import annotations

from agent.protocol import (
    AuditParams,
    AutopilotParams,
    AutopilotStatusParams,
    AutostartParams,
    AutostartStatusParams,
    DatasetsConfig,
    DetailParams,
    DrafterCheckParams,
    DraftSetting,
    EventsParams,
    FilesHashParams,
    GenerateParams,
    HelloParams,
    InstallParams,
    JobsParams,
    LaunchParams,
    LogReadParams,
    LogsParams,
    LogSubscribeParams,
    LogUnsubscribeParams,
    NotifyStatusParams,
    OperationsParams,
    PingParams,
    PipelineApplyParams,
    PipelineConfig,
    RedeployParams,
    Request,
    RollbackParams,
    SequenceParams,
    SequenceStep,
    SnapshotParams,
    StagedFile,
    StopParams,
    SweepParams,
    TokenizerCheckParams,
    WatchParams,
)

GOLDEN_REQUESTS: list[tuple[Request[object], str]] = [
    (
        Request(
            1,
            "hello",
            HelloParams(
                1,
                "eagle-console 0.1.0",
                PipelineConfig(
                    DatasetsConfig("/data", budget=10_000_000, budgets={"B8_math": 5_000_000}),
                    sglang_url="http://127.0.0.1:30000",
                ),
            ),
        ),  # fmt: skip
        '{"id":1,"method":"hello","params":{"protocol_version":1,"client_version":"eagle-console'
        ' 0.1.0","pipeline":{"datasets":{"root":"/data","prompts_file":"prompts.jsonl",'
        '"responses_file":"raw_responses.jsonl","budget":10000000,"budgets":{"B8_math":5000000},'
        '"stall_after_s":600.0,"overrun_alert_share":0.02,"low_disk_floor_bytes":1073741824,'
        '"guard":"alert","guards":{},"stall_guard_s":null,"truncation_alert_share":0.1},'
        '"sglang_url":"http://127.0.0.1:30000","sglang_log":null,"sglang_api_key_file":null,'
        '"sglang_api":null,"sglang_model":null,"jobs":{},"external":{},'
        '"deploy_roots":[],"tokenizer":null,"trust_remote_code":false,"notify":null,"nvidia_smi":null}}}',
    ),
    (
        Request(17, "tokenizer.check", TokenizerCheckParams(30.0)),
        '{"id":17,"method":"tokenizer.check","params":{"timeout_s":30.0}}',
    ),
    (
        Request(18, "drafter.check", DrafterCheckParams("/out/run-step4")),
        '{"id":18,"method":"drafter.check","params":{"path":"/out/run-step4"}}',
    ),
    (Request(2, "ping", PingParams()), '{"id":2,"method":"ping","params":{}}'),
    (Request(3, "snapshot", SnapshotParams()), '{"id":3,"method":"snapshot","params":{}}'),
    (Request(4, "jobs.list", JobsParams()), '{"id":4,"method":"jobs.list","params":{}}'),
    (
        Request(18, "events.list", EventsParams(3600.0, 50)),
        '{"id":18,"method":"events.list","params":{"since_s":3600.0,"limit":50}}',
    ),
    (
        Request(19, "notify.status", NotifyStatusParams()),
        '{"id":19,"method":"notify.status","params":{}}',
    ),
    (
        Request(15, "audit.read", AuditParams(20)),
        '{"id":15,"method":"audit.read","params":{"limit":20}}',
    ),
    (
        Request(16, "datasets.detail", DetailParams("B1", 5)),
        '{"id":16,"method":"datasets.detail","params":{"name":"B1","recent":5}}',
    ),
    (
        Request(14, "snapshot.watch", WatchParams(0.5)),
        '{"id":14,"method":"snapshot.watch","params":{"interval_s":0.5}}',
    ),
    (
        Request(5, "jobs.launch", LaunchParams("inference", "B1", ("python", "-m", "x")), "k-1"),
        '{"id":5,"method":"jobs.launch","params":{"job":"inference","dataset":"B1","argv":'
        '["python","-m","x"],"force":false,"node":null},"idempotency_key":"k-1"}',
    ),
    (
        Request(6, "jobs.stop", StopParams("inference-B1-20261129-120000"), "k-2"),
        '{"id":6,"method":"jobs.stop","params":{"job_id":"inference-B1-20261129-120000"},'
        '"idempotency_key":"k-2"}',
    ),
    (Request(7, "logs.list", LogsParams()), '{"id":7,"method":"logs.list","params":{}}'),
    (
        Request(11, "files.hash", FilesHashParams(("/r/a.py",))),
        '{"id":11,"method":"files.hash","params":{"paths":["/r/a.py"]}}',
    ),
    (
        Request(
            12,
            "files.install",
            InstallParams("/r/a.py", "/r/.a.py.eagle-upload-1", "ab", 420),
            "k-3",
        ),
        '{"id":12,"method":"files.install","params":{"target":"/r/a.py","staged":'
        '"/r/.a.py.eagle-upload-1","sha256":"ab","mode":420},"idempotency_key":"k-3"}',
    ),
    (
        Request(13, "files.rollback", RollbackParams("/r/a.py"), "k-4"),
        '{"id":13,"method":"files.rollback","params":{"target":"/r/a.py"},"idempotency_key":"k-4"}',
    ),
    (
        Request(8, "logs.read", LogReadParams("sglang", -4096)),
        '{"id":8,"method":"logs.read","params":{"name":"sglang","offset":-4096,"inode":null,'
        '"max_bytes":524288}}',
    ),
    (
        Request(9, "logs.subscribe", LogSubscribeParams("job:x", 1024, 77)),
        '{"id":9,"method":"logs.subscribe","params":{"name":"job:x","offset":1024,"inode":77}}',
    ),
    (
        Request(10, "logs.unsubscribe", LogUnsubscribeParams("job:x")),
        '{"id":10,"method":"logs.unsubscribe","params":{"name":"job:x"}}',
    ),
    (
        Request(
            20,
            "operations.redeploy",
            RedeployParams("j1", None, (StagedFile("/r/a.py", "/r/.a.py.eagle-upload-1", "ab"),)),
            "k-5",
        ),  # fmt: skip
        '{"id":20,"method":"operations.redeploy","params":{"job_id":"j1","argv":null,"files":['
        '{"target":"/r/a.py","staged":"/r/.a.py.eagle-upload-1","sha256":"ab","mode":420}]},'
        '"idempotency_key":"k-5"}',
    ),
    (
        Request(21, "operations.generate", GenerateParams("inference", ("B1", "B2")), "k-6"),
        '{"id":21,"method":"operations.generate","params":{"job":"inference","datasets":'
        '["B1","B2"]},"idempotency_key":"k-6"}',
    ),
    (
        Request(
            27,
            "operations.sequence",
            SequenceParams(
                "hand-over", (SequenceStep("stop", job_id="j1"), SequenceStep("start", job="train"))
            ),
            "k-9",
        ),  # fmt: skip
        '{"id":27,"method":"operations.sequence","params":{"subject":"hand-over","steps":['
        '{"action":"stop","job_id":"j1","job":null,"dataset":null,"force":false},{"action":"start",'
        '"job_id":null,"job":"train","dataset":null,"force":false}]},"idempotency_key":"k-9"}',
    ),
    (
        Request(
            28,
            "operations.sweep",
            SweepParams("drafter", "evaluate", (DraftSetting(steps=3, topk=1, draft_tokens=4),)),
            "k-10",
        ),  # fmt: skip
        '{"id":28,"method":"operations.sweep","params":{"server_job":"drafter","evaluate_job":'
        '"evaluate","settings":[{"steps":3,"topk":1,"draft_tokens":4,"speculative_tokens":null}]},'
        '"idempotency_key":"k-10"}',
    ),
    (
        Request(22, "operations.list", OperationsParams("redeploy-1")),
        '{"id":22,"method":"operations.list","params":{"operation_id":"redeploy-1"}}',
    ),
    (
        Request(23, "autopilot.status", AutopilotStatusParams()),
        '{"id":23,"method":"autopilot.status","params":{}}',
    ),
    (
        Request(24, "autopilot.control", AutopilotParams("pause"), "k-7"),
        '{"id":24,"method":"autopilot.control","params":{"action":"pause"},"idempotency_key":"k-7"}',
    ),
    (
        Request(25, "autostart.status", AutostartStatusParams()),
        '{"id":25,"method":"autostart.status","params":{}}',
    ),
    (
        Request(26, "autostart.set", AutostartParams("install"), "k-8"),
        '{"id":26,"method":"autostart.set","params":{"action":"install"},"idempotency_key":"k-8"}',
    ),
    (
        Request(
            28,
            "pipeline.apply",
            PipelineApplyParams(PipelineConfig(sglang_url="http://127.0.0.1:30000")),
            "k-10",
        ),
        '{"id":28,"method":"pipeline.apply","params":{"pipeline":{"datasets":null,'
        '"sglang_url":"http://127.0.0.1:30000","sglang_log":null,"sglang_api_key_file":null,'
        '"sglang_api":null,"sglang_model":null,"jobs":{},"external":{},"deploy_roots":[],'
        '"tokenizer":null,"trust_remote_code":false,"notify":null,"nvidia_smi":null}},"idempotency_key":"k-10"}',
    ),
]
