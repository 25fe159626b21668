# A Rails application's models, unchanged, against pg_memo (issue 47;
# test/t/025).
#
# ActiveRecord (6.1, with ruby-pg) pages through one team's employees as a
# controller does: where(team_id:).count, then
# where(team_id:).order(:id).limit(20).offset(n). With prepared statements
# on (ActiveRecord's default), each is a named prepared statement with $1,
# $2... whose types the server infers; with prepared statements off (as
# behind PgBouncer in transaction mode), the values are in the text. About
# one request in twenty is a write through the model, alternating a salary
# raise (update_all) and a move to another team (update!, in a
# transaction), on a row of the page just read, so that a page or a count
# served stale would show. Every request runs twice: through the
# application's connection (served by pg_memo: by a registration of its
# shape, or admitted automatically) and through a connection where pg_memo
# serves nothing (pg_memo.serve_statements = off, set by ActiveRecord's
# own "variables"); the two results must be equal.
#
# usage: activerecord_pages.rb APP_CONNINFO TRUTH_CONNINFO TABLE {prepared|literal} REQUESTS
#        activerecord_pages.rb APP_CONNINFO TRUTH_CONNINFO TABLE {prepared|literal} statements
#
# With a number of requests, prints "requests=N writes=W checked=N
# mismatches=M errors=E" and the first mismatches. With "statements", runs
# one first page and one second page and prints, for each SELECT sent,
# "statement<TAB>its text with $1, $2... for its values<TAB>its text as
# sent". The truth is read directly (a session setting through a
# transaction pooler would reach other clients).
require 'active_record'
require 'pg'

app_conninfo, truth_conninfo, table, values, mode = ARGV
unless mode
  raise 'usage: activerecord_pages.rb APP_CONNINFO TRUTH_CONNINFO TABLE {prepared|literal} {REQUESTS|statements}'
end

# A database.yml's entry, from a libpq connection string.
def config(conninfo, prepared, variables = {})
  given = PG::Connection.conninfo_parse(conninfo).select { |o| o[:val] }.to_h { |o| [o[:keyword], o[:val]] }
  { 'adapter' => 'postgresql', 'host' => given['host'], 'port' => given['port'],
    'database' => given['dbname'], 'username' => given['user'], 'prepared_statements' => prepared,
    'variables' => variables, 'pool' => 1 }
end

class AppRecord < ActiveRecord::Base
  self.abstract_class = true
end

class TruthRecord < ActiveRecord::Base
  self.abstract_class = true
end

AppRecord.establish_connection(config(app_conninfo, values == 'prepared'))
TruthRecord.establish_connection(config(truth_conninfo, values == 'prepared',
                                        'pg_memo.serve_statements' => 'off'))

class Employee < AppRecord
  self.primary_key = 'id'
end
Employee.table_name = table

class TruthEmployee < TruthRecord
  self.primary_key = 'id'
end
TruthEmployee.table_name = table

# One page of a team's employees, with the count the page's links need.
def request(model, team, number)
  scope = model.where(team_id: team).order(:id)
  [scope.count,
   scope.limit(20).offset(20 * (number - 1)).to_a.map { |e| [e.id, e.team_id, e.name, e.salary] }]
end

def run
  yield
rescue ActiveRecord::ActiveRecordError => e
  ['error', e.class.name, e.message.lines.first.to_s.strip]
end

if mode == 'statements'
  Employee.connection # connect, and read the schema, before listening
  Employee.columns
  sent = []
  subscriber = ActiveSupport::Notifications.subscribe('sql.active_record') do |*, payload|
    sent << payload[:sql] unless payload[:name] == 'SCHEMA' || payload[:cached]
  end
  request(Employee, 1, 1)
  request(Employee, 1, 2)
  ActiveSupport::Notifications.unsubscribe(subscriber)
  sent.select { |sql| sql.start_with?('SELECT') }.uniq.each do |sql|
    n = 0
    shape = sql.gsub(/(?<![\w$."])\d+(?![\w."])/) { "$#{n += 1}" }
    puts "statement\t#{shape}\t#{sql}"
  end
  exit 0
end

serving = TruthRecord.connection.select_value('SHOW pg_memo.serve_statements')
raise "the truth's connection must have serving off, not #{serving}" unless serving == 'off'

rng = Random.new(25)
checked = mismatches = errors = writes = 0
shown = []
Integer(mode).times do |i|
  team = rng.rand(4)
  number = rng.rand(1..3)
  got = run { request(Employee, team, number) }
  want = run { request(TruthEmployee, team, number) }
  checked += 1
  if got != want
    mismatches += 1
    shown << "request #{i} team=#{team} page=#{number}: got #{got.inspect} want #{want.inspect}" if shown.size < 3
  end
  errors += 1 if got.first == 'error'
  next unless i % 20 == 19 && want.first != 'error' && !want[1].empty?

  # A write on a row of the page just read: a served page that is not
  # invalidated at the commit would differ from the truth's.
  victim = want[1][rng.rand(want[1].size)][0]
  writes += 1
  if writes.odd?
    Employee.where(id: victim).update_all('salary = salary + 7')
  else
    employee = Employee.find(victim)
    employee.update!(team_id: (employee.team_id + 1 + rng.rand(3)) % 4)
  end
end

puts "requests=#{checked} writes=#{writes} checked=#{checked} mismatches=#{mismatches} errors=#{errors}"
shown.each { |line| puts line }
