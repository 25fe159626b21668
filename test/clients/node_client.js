// A Node.js application, unchanged, against registered statements: the
// page query of cl_items as a named statement and as an unnamed one
// (node-postgres' two ways), across writes by another client, compared
// with the same statement where pg_memo serves nothing
// (pg_memo.serve_statements = off). Prints "checked=N mismatches=M".
//
// usage: node node_client.js APP_CONNSTRING TRUTH_CONNSTRING WRITER_CONNSTRING
const { Client } = require('pg');

async function main() {
  const [appConn, truthConn, writerConn] = process.argv.slice(2);
  const app = new Client({ connectionString: appConn });
  const truth = new Client({ connectionString: truthConn });
  const writer = new Client({ connectionString: writerConn });
  await Promise.all([app.connect(), truth.connect(), writer.connect()]);
  await truth.query('SET pg_memo.serve_statements = off');
  const text = 'SELECT id, title FROM cl_items WHERE team = $1 ORDER BY id LIMIT $2';
  let checked = 0, mismatches = 0;
  const shown = [];
  for (let i = 0; i < 60; i++) {
    const team = i % 4;
    const named = i % 2 === 0;
    const query = named ? { name: 'cl_page', text, values: [team, 5] } : { text, values: [team, 5] };
    const got = JSON.stringify((await app.query(query)).rows);
    const want = JSON.stringify((await truth.query({ text, values: [team, 5] })).rows);
    checked++;
    if (got !== want) {
      mismatches++;
      if (shown.length < 3) shown.push(`team ${team}: got ${got} want ${want}`);
    }
    if (i % 5 === 4) await writer.query("UPDATE cl_items SET title = title || '-' WHERE id = $1", [team + 1]);
  }
  console.log(`checked=${checked} mismatches=${mismatches}`);
  shown.forEach((line) => console.log(line));
  await Promise.all([app.end(), truth.end(), writer.end()]);
}

main().catch((e) => {
  console.log(`error: ${e.message}`);
  process.exit(1);
});
