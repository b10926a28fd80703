//! Property test through the real binary: arbitrary JSON-RPC messages (ids of both kinds,
//! odd whitespace and key order, unicode and escapes, huge numbers, big lines) cross the
//! bridge in both directions byte-identical and in order.
//!
//! The agent is a shell that records its stdin to a file and plays a prepared file to
//! its stdout, so what the bridge delivered can be compared byte for byte.

use crate::common::*;
use proptest::prelude::*;

fn ws() -> impl Strategy<Value = String> {
    prop::collection::vec(prop_oneof![Just(" "), Just("\t"), Just("")], 0..3)
        .prop_map(|v| v.concat())
}

fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _/-]{0,12}".prop_map(|s| format!("\"{s}\"")),
        "\\PC{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just(r#""\u00e9\ud83d\ude00\n\t\"\\""#.to_owned()),
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        Just("1e400".to_owned()),
        Just("-0.0".to_owned()),
        Just("1234567890123456789012345678901234567890".to_owned()),
        Just("3.141592653589793238462643383279".to_owned()),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        json_string(),
        number(),
        Just("true".to_owned()),
        Just("null".to_owned())
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z]{1,6}", inner, ws()), 0..4).prop_map(|v| {
                let members: Vec<String> = v
                    .into_iter()
                    .map(|(k, val, w)| format!("\"{k}\"{w}:{w}{val}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5).prop_map(|n| n.to_string()),
        (0u64..5).prop_map(|n| format!("\"{n}\"")),
        json_string(),
        number(),
    ]
}

/// Ids of responses, apart from the ids of requests: the bridge rightly drops a second
/// response to a request it has already seen answered, which is not what this test is about.
fn response_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "resp-[a-z0-9]{1,6}".prop_map(|s| format!("\"{s}\"")),
        (1u64 << 60..u64::MAX).prop_map(|n| n.to_string()),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"session/update\"".to_owned()),
        Just("\"_vendor/custom\"".to_owned()),
        Just("\"fs/read_text_file\"".to_owned()),
        Just("\"session\\/prompt\"".to_owned()),
        "[a-z]{1,8}".prop_map(|s| format!("\"{s}\"")),
    ]
}

/// One JSON-RPC message as a single line, members in a random order.
fn message() -> impl Strategy<Value = String> {
    let members = prop_oneof![
        (id(), method(), value()).prop_map(|(i, m, p)| vec![
            format!("\"id\":{i}"),
            format!("\"method\":{m}"),
            format!("\"params\":{{\"p\":{p}}}"),
        ]),
        (method(), value())
            .prop_map(|(m, p)| vec![format!("\"method\":{m}"), format!("\"params\":[{p}]"),]),
        (response_id(), value())
            .prop_map(|(i, r)| vec![format!("\"id\":{i}"), format!("\"result\":{r}")]),
        (response_id(), number()).prop_map(|(i, c)| vec![
            format!("\"id\":{i}"),
            format!("\"error\":{{\"code\":{c},\"message\":\"m\"}}"),
        ]),
    ];
    (members, ws(), any::<prop::sample::Index>(), 0usize..3).prop_map(
        |(mut members, w, at, big)| {
            members.push("\"jsonrpc\":\"2.0\"".to_owned());
            let n = members.len();
            members.rotate_left(at.index(n));
            if big == 0 {
                members.push(format!("\"pad\":\"{}\"", "é".repeat(300_000)));
            }
            format!("{w}{{{w}{}{w}}}", members.join(&format!("{w},{w}")))
        },
    )
}

/// Asserts equality without printing multi-MiB lines.
fn same(got: &[String], want: &[String], what: &str) {
    let short = |s: &str| s.chars().take(160).collect::<String>();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g == w,
            "{what}: line {i} differs:\n got: {}\nwant: {}",
            short(g),
            short(w)
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: line count differs");
}

async fn roundtrip(client_lines: Vec<String>, agent_lines: Vec<String>) {
    roundtrip_in_bursts(client_lines, agent_lines, &[usize::MAX]).await;
}

/// Both peers write their lines in bursts of the given sizes (cycled), with a pause between
/// bursts, so the bridge's reads alternate between a few lines and many.
async fn roundtrip_in_bursts(
    client_lines: Vec<String>,
    agent_lines: Vec<String>,
    bursts: &[usize],
) {
    let dir = temp_dir("lossless");
    let rec = dir.join("agent-stdin.jsonl");
    // The agent plays its parts one file at a time, pausing between them.
    let mut script = String::from("{ true; ");
    for (i, part) in split(&agent_lines, bursts).iter().enumerate() {
        let play = dir.join(format!("agent-stdout-{i}.jsonl"));
        std::fs::write(
            &play,
            part.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        script += &format!("cat '{}'; sleep 0.02; ", play.display());
    }
    script += "} & cat > \"$1\"; wait";
    // The agent still has its lines to write when its stdin closes (the test reads only
    // after it has sent everything): a grace far above what that takes on a loaded machine
    // (the bridge exits as soon as the agent does).
    // Every line crosses unchanged only outside the wall, which refuses `fs/*` and
    // `terminal/*` and offers neither in `initialize`.
    let argv: Vec<String> = [
        "--sandbox",
        "off",
        "--shutdown-grace",
        "60s",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
        rec.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut b = Bridge::spawn(&argv);
    for part in split(&client_lines, bursts) {
        let input: String = part.iter().map(|l| format!("{l}\n")).collect();
        b.send_raw(input.as_bytes()).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    b.close_stdin();
    let got_at_client = b.drain().await;
    assert_eq!(b.wait().await, 0, "stderr: {}", b.stderr());
    // After the agent's lines come the bridge's errors for client requests it never
    // answered and `$/cancel_request` for agent requests the client still shows (the
    // agent is gone): nothing else.
    let (relayed, answered_by_bridge) =
        got_at_client.split_at(agent_lines.len().min(got_at_client.len()));
    same(relayed, &agent_lines, "agent->client");
    for line in answered_by_bridge {
        // (Checked as text: the id it names may be a number like 1e400.)
        if line
            .starts_with(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"#)
        {
            continue;
        }
        assert!(
            line.contains(r#""error":{"code":-32603,"message":"agent exited"#),
            "unexpected extra line: {}",
            line.chars().take(200).collect::<String>()
        );
    }
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let got_at_agent: Vec<String> = recorded.lines().map(str::to_owned).collect();
    // After the client's lines come the bridge's answers to agent requests the client left
    // unanswered when it closed its output (one each): nothing else.
    let (relayed, answered_by_bridge) =
        got_at_agent.split_at(client_lines.len().min(got_at_agent.len()));
    same(relayed, &client_lines, "client->agent");
    for line in answered_by_bridge {
        assert!(
            line.contains(
                r#""error":{"code":-32603,"message":"the client disconnected before answering"#
            ),
            "unexpected extra line to the agent: {}",
            line.chars().take(200).collect::<String>()
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `lines` cut into consecutive parts of the sizes in `bursts` (cycled).
fn split<'a>(lines: &'a [String], bursts: &[usize]) -> Vec<&'a [String]> {
    let mut parts = Vec::new();
    let mut rest = lines;
    for &n in bursts.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (part, more) = rest.split_at(n.min(rest.len()));
        parts.push(part);
        rest = more;
    }
    parts
}

/// Reads of many lines are scanned on the input's scan thread, reads of a few on the
/// reader: whichever way each read goes, every line crosses byte-identical and in order.
#[tokio::test]
async fn streams_keep_order_across_scan_paths() {
    let lines = |who: &str| -> Vec<String> {
        (0..3000)
            .map(|i| match i % 9 {
                // Requests break the runs of forwarded lines.
                4 => format!(r#"{{"jsonrpc":"2.0","id":"{who}{i}","method":"x/ping","params":{{"n":{i}}}}}"#),
                _ => format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","n":{i},"pad":"{}"}}}}"#,
                    "é".repeat(i % 50)
                ),
            })
            .collect()
    };
    let bursts = [1, 200, 2, 40, 1, 1, 600, 3, 33, 1];
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        roundtrip_in_bursts(lines("c"), lines("a"), &bursts),
    )
    .await
    .expect("the round trip finished");
}

proptest! {
    #![proptest_config(crate::common::proptest_config(24))]
    #[test]
    fn any_message_crosses_byte_identical_and_in_order(
        client in prop::collection::vec(message(), 0..20),
        agent in prop::collection::vec(message(), 0..20),
    ) {
        for l in client.iter().chain(&agent) {
            prop_assert!(serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok(), "generator made invalid JSON: {}", l);
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(roundtrip(client, agent));
    }
}
