// A Node.js application calling the memo functions with node-postgres'
// default binding (every value untyped text: a JavaScript array becomes
// an array literal), as unnamed and as named statements, across writes by
// another client, each result compared with the direct query. The cache
// names: dp.node_unnamed, dp.node_named, and dp.node_fresh (unnamed, with
// max_staleness in the call). Prints "checked=N mismatches=M errors=E".
//
// usage: node node_memo_calls.js APP_CONNSTRING WRITER_CONNSTRING
const { Client } = require('pg');

async function main() {
  const [appConn, writerConn] = process.argv.slice(2);
  const app = new Client({ connectionString: appConn });
  const writer = new Client({ connectionString: writerConn });
  await Promise.all([app.connect(), writer.connect()]);
  const count = 'SELECT memo.count($1, $2, $3) AS n';
  const fresh = 'SELECT memo.count($1, $2, $3, max_staleness => $4) AS n';
  const query = 'SELECT * FROM dp_items WHERE team = $1 AND done = $2';
  const direct = 'SELECT count(*) AS n FROM dp_items WHERE team = $1 AND done = $2';
  let checked = 0, mismatches = 0, errors = 0;
  const shown = [];
  async function compare(what, got, want) {
    let g, w;
    try { g = JSON.stringify((await got()).rows); } catch (e) { g = `error ${e.code} ${e.message}`; errors++; }
    try { w = JSON.stringify((await want()).rows); } catch (e) { w = `error ${e.code}`; }
    checked++;
    if (g !== w) {
      mismatches++;
      if (shown.length < 3) shown.push(`${what}: got ${g} want ${w}`);
    }
  }
  for (let i = 0; i < 40; i++) {
    const team = i % 4, done = i % 3 === 0;
    const want = () => app.query(direct, [team, done]);
    await compare('unnamed', () => app.query(count, ['dp.node_unnamed', query, [team, done]]), want);
    await compare('named', () => app.query({ name: 'dp_count', text: count,
                                             values: ['dp.node_named', query, [team, done]] }), want);
    await compare('fresh', () => app.query(fresh, ['dp.node_fresh', query, [team, done], '0 seconds']), want);
    if (i % 5 === 4) await writer.query('UPDATE dp_items SET done = NOT done WHERE id = $1', [team + 1]);
  }
  console.log(`checked=${checked} mismatches=${mismatches} errors=${errors}`);
  shown.forEach((line) => console.log(line));
  await Promise.all([app.end(), writer.end()]);
}

main().catch((e) => {
  console.log(`error: ${e.message}`);
  process.exit(1);
});
