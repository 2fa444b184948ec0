// The Node flags the panel runs with (npm start, the test harness, deploy/panel/Dockerfile's CMD).
//
// --max-semi-space-size: Node 24's V8 sizes the young generation from the machine's memory;
// on a 24 GB machine the idle panel held about 240 MB resident, 166 MB of it the young
// generation's semi-spaces. 8 MB semi-spaces brought the idle panel to about 140 MB (16 MB:
// about 170 MB), but with this panel 151-165 MB over five starts, over the 150 MB budget;
// 4 MB: 142-150 MB, with no difference beyond the spread in ForwardAuth throughput,
// ingestion or the 10,000-host and 500,000-decision peaks (2 MB gained little more).
// Figures: bench/memory.bench.ts, docs/performance.md.
export const PANEL_NODE_FLAGS = ['--max-semi-space-size=4']
