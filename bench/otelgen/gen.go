// Package otelgen makes an OpenTelemetry load for the benches (bench/peers,
// bench/replicas) and sends it over OTLP/HTTP.
package otelgen

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The load: GenAI agent traces of TraceSpans spans (an invoke_agent span,
// then chat and execute_tool spans in turn under it, the last chat span
// giving the final answer), sent as an OpenTelemetry batch span processor
// sends them: spans as they end, BatchSpans a request. Each trace's spans
// are split over two consecutive requests (the agent span, ending last, in
// the second), so every request both starts traces and completes traces
// begun in the one before.
//
// The text is made up here, per agent kind, from pools of requests, tool
// calls, tool results and answers rendered at start with random names,
// places, ids and amounts, then combined per trace with fresh ids, so no
// two traces are alike while a span costs the generator little (it shares
// the cores with the servers measured).
const (
	TraceSpans = 20
	BatchSpans = 512
)

// Generator makes the requests of one exporter.
type Generator struct {
	rng   *rand.Rand
	token string // in every trace's final answer: what a search finds
	res   *resourcepb.Resource
	scope *commonpb.InstrumentationScope
	kinds []*agentPool
	carry []*tracepb.Span // second parts of the traces begun in the last batch
	// carryIDs are the trace ids the carry completes.
	carryIDs [][]byte
	buf      []byte // the last request's body, reused for the next
}

// Batch is one request.
type Batch struct {
	Body     []byte
	Spans    int
	Complete [][]byte // ids of the traces whose last spans are in it
}

// NewGenerator makes an exporter's generator: seed picks its text, service
// names its resource, token is in every trace's final answer.
func NewGenerator(seed uint64, service, token string) *Generator {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	g := &Generator{
		rng:   rng,
		token: token,
		res: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			str("service.name", service), str("service.version", "2.4."+strconv.Itoa(int(seed%7))),
			str("deployment.environment.name", "bench"), str("telemetry.sdk.language", "python"),
			str("telemetry.sdk.name", "opentelemetry"), str("telemetry.sdk.version", "1.38.0"),
			str("host.name", "agent-worker-"+strconv.Itoa(int(seed))),
		}},
		scope: &commonpb.InstrumentationScope{Name: "opentelemetry.instrumentation.openai_agents", Version: "0.1.0"},
	}
	for _, k := range agentKinds {
		g.kinds = append(g.kinds, k.pool(rng))
	}
	return g
}

// Next returns a request of BatchSpans spans (its body valid until the
// next call): the carried second parts of
// the traces begun in the last one, then the first parts of new traces.
func (g *Generator) Next() Batch {
	spans := g.carry
	complete := g.carryIDs
	g.carry, g.carryIDs = nil, nil
	// New traces fill the rest, so many that their second parts make
	// about half the next batch (the first batch too): k traces split
	// their room as evenly as may be.
	room := BatchSpans - len(spans)
	k := max(1, (BatchSpans+BatchSpans/2+TraceSpans/2-len(spans))/TraceSpans)
	for i := range k {
		tr := g.trace()
		n := room / k
		if i < room%k {
			n++
		}
		// tr[0] is the agent span; its children end in order.
		spans = append(spans, tr[1:1+n]...)
		g.carry = append(g.carry, tr[1+n:]...)
		g.carry = append(g.carry, tr[0])
		g.carryIDs = append(g.carryIDs, tr[0].TraceId)
	}
	return Batch{Body: g.marshal(spans), Spans: len(spans), Complete: complete}
}

// Flush returns the request that completes the traces begun in the last
// batch, and nothing more; a batch with no spans when there are none.
func (g *Generator) Flush() Batch {
	spans, complete := g.carry, g.carryIDs
	g.carry, g.carryIDs = nil, nil
	if len(spans) == 0 {
		return Batch{}
	}
	return Batch{Body: g.marshal(spans), Spans: len(spans), Complete: complete}
}

func (g *Generator) marshal(spans []*tracepb.Span) []byte {
	req := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   g.res,
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: g.scope, Spans: spans}},
		SchemaUrl:  "https://opentelemetry.io/schemas/1.37.0",
	}}}
	b, err := proto.MarshalOptions{}.MarshalAppend(g.buf[:0], req)
	if err != nil {
		panic(err) // only for invalid UTF-8, which the generator does not make
	}
	g.buf = b
	return b
}

// trace makes one agent run: the agent span first, then its children in
// the order they end.
func (g *Generator) trace() []*tracepb.Span {
	r := g.rng
	k := g.kinds[r.IntN(len(g.kinds))]
	traceID := g.id(16)
	rootID := g.id(8)
	conv := "conv_" + g.word(20)
	// The run ended a moment ago: its spans are being exported.
	end := time.Now().Add(-time.Duration(r.IntN(500)) * time.Millisecond)
	t := end.Add(-time.Duration(20+r.IntN(20)) * time.Second)
	start := t
	spans := make([]*tracepb.Span, 0, TraceSpans)
	spans = append(spans, nil) // the agent span, made last
	var input string           // the next chat span's input messages
	model := k.models[r.IntN(len(k.models))]
	input = `[{"role":"user","parts":[{"type":"text","content":"` + k.asks[r.IntN(len(k.asks))] + `"}]}]`
	steps := (TraceSpans - 2) / 2
	for i := range steps + 1 {
		chat := &tracepb.Span{TraceId: traceID, SpanId: g.id(8), ParentSpanId: rootID, Name: "chat " + model,
			Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: nanos(t)}
		t = t.Add(time.Duration(400+r.IntN(2200)) * time.Millisecond)
		chat.EndTimeUnixNano = nanos(t)
		in, out := 150+r.IntN(2500), 20+r.IntN(200)
		chat.Attributes = []*commonpb.KeyValue{
			str("gen_ai.operation.name", "chat"), str("gen_ai.provider.name", "openai"),
			str("gen_ai.request.model", model), str("gen_ai.response.model", model+"-2024-08-06"),
			str("gen_ai.response.id", "chatcmpl-"+g.word(29)), str("gen_ai.conversation.id", conv),
			num("gen_ai.usage.input_tokens", int64(in)),
			num("gen_ai.usage.output_tokens", int64(out)),
			str("gen_ai.input.messages", input),
		}
		if i == 0 {
			chat.Attributes = append(chat.Attributes, str("gen_ai.system_instructions", k.system))
		}
		if i == steps {
			answer := k.answers[r.IntN(len(k.answers))]
			chat.Attributes = append(chat.Attributes, strs("gen_ai.response.finish_reasons", "stop"),
				str("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+answer[0]+g.token+`-`+strconv.Itoa(1000+r.IntN(9000))+answer[1]+`"}],"finish_reason":"stop"}]`))
			spans = append(spans, chat)
			break
		}
		call := k.calls[r.IntN(len(k.calls))]
		tl := k.tools[call.tool]
		callID := "call_" + g.word(24)
		chat.Attributes = append(chat.Attributes, strs("gen_ai.response.finish_reasons", "tool_calls"),
			str("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+call.intent+
				`"},{"type":"tool_call","id":"`+callID+`","name":"`+tl.name+`","arguments":`+call.args+`}],"finish_reason":"tool_call"}]`))
		spans = append(spans, chat)

		result := tl.results[r.IntN(len(tl.results))]
		tool := &tracepb.Span{TraceId: traceID, SpanId: g.id(8), ParentSpanId: rootID, Name: "execute_tool " + tl.name,
			Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: nanos(t)}
		t = t.Add(time.Duration(15+r.IntN(600)) * time.Millisecond)
		tool.EndTimeUnixNano = nanos(t)
		tool.Attributes = []*commonpb.KeyValue{
			str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", tl.name),
			str("gen_ai.tool.type", "function"),
			str("gen_ai.tool.call.id", callID), str("gen_ai.tool.call.arguments", call.args),
			str("gen_ai.tool.call.result", result),
		}
		if r.IntN(40) == 0 {
			tool.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream timed out after 10s"}
		}
		spans = append(spans, tool)
		input = `[{"role":"tool","parts":[{"type":"tool_call_response","id":"` + callID + `","response":` + result + `}]}]`
	}
	spans[0] = &tracepb.Span{TraceId: traceID, SpanId: rootID, Name: "invoke_agent " + k.agent,
		Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: nanos(start) - 2e6, EndTimeUnixNano: nanos(t) + 1e6,
		Attributes: []*commonpb.KeyValue{
			str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", k.agent),
			str("gen_ai.agent.id", k.agentID), str("gen_ai.agent.description", k.description),
			str("gen_ai.provider.name", "openai"), str("gen_ai.request.model", model),
			str("gen_ai.conversation.id", conv),
		}}
	return spans
}

func nanos(t time.Time) uint64 { return uint64(t.UnixNano()) }

func (g *Generator) id(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.BigEndian.PutUint64(b[i:], g.rng.Uint64()|1)
	}
	return b
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// word is n random letters and digits.
func (g *Generator) word(n int) string {
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(alnum[g.rng.IntN(len(alnum))])
	}
	return b.String()
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func strs(k string, vs ...string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{}
	for _, v := range vs {
		arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}})
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// TraceHex is a trace id as OTLP/JSON and the query APIs write it.
func TraceHex(id []byte) string { return hex.EncodeToString(id) }

// The agent kinds and their text. Texts hold no double quote nor
// backslash, so they go into JSON as they are.

// agentKind describes one kind of agent; pool renders its texts.
type agentKind struct {
	agent, agentID, description, system string
	models                              []string
	tools                               []toolKind
	ask                                 func(v *vocab) string
	answer                              func(v *vocab) (string, string) // the final answer around the run's token
}

type toolKind struct {
	name   string
	call   func(v *vocab) (intent, args string)
	result func(v *vocab) string
}

// agentPool is an agent kind's rendered texts.
type agentPool struct {
	*agentKind
	asks    []string
	answers [][2]string
	calls   []toolCall
	tools   []toolPool
}

type toolCall struct {
	tool         int
	intent, args string
}

type toolPool struct {
	name    string
	results []string
}

const poolSize = 400

func (k *agentKind) pool(rng *rand.Rand) *agentPool {
	v := &vocab{rng}
	p := &agentPool{agentKind: k}
	for range poolSize {
		p.asks = append(p.asks, k.ask(v))
		a, b := k.answer(v)
		p.answers = append(p.answers, [2]string{a, b})
	}
	for i, t := range k.tools {
		tp := toolPool{name: t.name}
		for range poolSize / 2 {
			intent, args := t.call(v)
			p.calls = append(p.calls, toolCall{i, intent, args})
			tp.results = append(tp.results, t.result(v))
		}
		p.tools = append(p.tools, tp)
	}
	return p
}

// vocab draws the made-up names, places and numbers.
type vocab struct{ r *rand.Rand }

func (v *vocab) pick(xs ...string) string { return xs[v.r.IntN(len(xs))] }
func (v *vocab) n(lo, hi int) int         { return lo + v.r.IntN(hi-lo+1) }

func (v *vocab) code(letters, digits int) string {
	var b strings.Builder
	for range letters {
		b.WriteByte(byte('A' + v.r.IntN(26)))
	}
	for range digits {
		b.WriteByte(byte('0' + v.r.IntN(10)))
	}
	return b.String()
}

var (
	firstNames = []string{"Amara", "Bastian", "Chen", "Dalia", "Emeka", "Freya", "Gustavo", "Hana", "Ilya", "Jamal", "Keiko", "Lucia",
		"Mateo", "Noor", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tamar", "Umar", "Vera", "Wen", "Ximena", "Yusuf", "Zofia"}
	lastNames = []string{"Okafor", "Lindqvist", "Moreau", "Nakamura", "Petrov", "Haddad", "Fernandes", "Kowalski", "Mensah", "Brennan",
		"Castillo", "Dubois", "Eriksen", "Gallo", "Ivanova", "Jansen", "Khan", "Lopez", "Murphy", "Novak", "Ortiz", "Schmidt"}
	airports = []string{"JFK", "LAX", "ORD", "SFO", "SEA", "BOS", "ATL", "DFW", "DEN", "MIA", "LHR", "CDG", "FRA", "AMS", "MAD",
		"NRT", "SIN", "SYD", "YYZ", "MEX", "GRU", "DXB", "IST", "ZRH"}
	products = []string{"wireless earbuds", "mechanical keyboard", "espresso machine", "hiking backpack", "desk lamp", "air purifier",
		"office chair", "running shoes", "smart watch", "water bottle", "laptop sleeve", "bluetooth speaker", "yoga mat",
		"electric kettle", "gaming mouse", "tablet stand", "cast iron pan", "down jacket", "portable charger", "noise cancelling headphones"}
	colors = []string{"black", "white", "navy", "forest green", "sand", "graphite", "red", "silver", "blue", "olive"}
	hosts  = []string{"web-01", "web-02", "db-primary", "db-replica-2", "build-runner-7", "vpn-gw", "mail-relay", "k8s-node-14", "cache-3", "ldap-1"}
	apps   = []string{"Outlook", "the VPN client", "Slack", "Jira", "the expense portal", "GitHub SSO", "Zoom", "the payroll system", "Okta", "the shared drive"}
	topics = []string{"solid-state battery energy density", "CRISPR off-target effects", "urban heat islands", "small modular reactors",
		"coral reef bleaching", "transformer inference costs", "microplastics in drinking water", "perovskite solar cell stability",
		"antibiotic resistance in hospitals", "lithium recycling", "sleep and memory consolidation", "carbon capture at cement plants"}
	months = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

func (v *vocab) name() string { return v.pick(firstNames...) + " " + v.pick(lastNames...) }
func (v *vocab) date() string {
	return fmt.Sprintf("2026-%02d-%02d", v.n(1, 12), v.n(1, 28))
}
func (v *vocab) money() string { return fmt.Sprintf("%d.%02d", v.n(9, 1900), v.n(0, 99)) }
func (v *vocab) email(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@" + v.pick("example.com", "mail.example.org", "corp.example.net")
}

var agentKinds = []*agentKind{
	{
		agent: "flight-support", agentID: "asst_fl1ght5upp0rt", description: "Changes, cancels and books flights for airline customers",
		system: "You are an airline customer service agent. Help the user change, cancel or book flights. Verify the user id and the " +
			"reservation before any change, explain fare differences, and ask for explicit confirmation (yes) before you update a booking. " +
			"Never make up flight numbers; use the tools. Basic economy cannot be modified.",
		models: []string{"gpt-4o", "gpt-4.1", "gpt-4o-mini"},
		tools: []toolKind{
			{name: "get_reservation_details",
				call: func(v *vocab) (string, string) {
					id := v.code(6, 0)
					return v.pick("Let me pull up reservation "+id+" first.", "I will check the details of reservation "+id+".",
							"Looking up booking "+id+" to see what can be changed."),
						`{"reservation_id":"` + id + `"}`
				},
				result: func(v *vocab) string {
					o, d := v.pick(airports...), v.pick(airports...)
					return `{"reservation_id":"` + v.code(6, 0) + `","user_id":"` + strings.ToLower(v.pick(firstNames...)) + `_` + v.code(0, 4) +
						`","origin":"` + o + `","destination":"` + d + `","flight_type":"` + v.pick("one_way", "round_trip") +
						`","cabin":"` + v.pick("basic_economy", "economy", "business") + `","flights":[{"flight_number":"HAT` + v.code(0, 3) +
						`","date":"` + v.date() + `","price":` + strconv.Itoa(v.n(80, 1900)) + `},{"flight_number":"HAT` + v.code(0, 3) +
						`","date":"` + v.date() + `","price":` + strconv.Itoa(v.n(80, 1900)) + `}],"passengers":[{"first_name":"` +
						v.pick(firstNames...) + `","last_name":"` + v.pick(lastNames...) + `"}],"payment_history":[{"payment_id":"credit_card_` +
						v.code(0, 7) + `","amount":` + strconv.Itoa(v.n(100, 3000)) + `}],"insurance":"` + v.pick("yes", "no") + `"}`
				}},
			{name: "search_direct_flight",
				call: func(v *vocab) (string, string) {
					o, d, date := v.pick(airports...), v.pick(airports...), v.date()
					return v.pick("I'll search direct flights from "+o+" to "+d+" on "+date+".",
							"Let me see which direct flights "+o+" to "+d+" still have seats on "+date+"."),
						`{"origin":"` + o + `","destination":"` + d + `","date":"` + date + `"}`
				},
				result: func(v *vocab) string {
					var b strings.Builder
					b.WriteString(`[`)
					for i := range v.n(2, 3) {
						if i > 0 {
							b.WriteString(`,`)
						}
						h := v.n(5, 21)
						fmt.Fprintf(&b, `{"flight_number":"HAT%03d","departure_time":"%02d:%02d:00","arrival_time":"%02d:%02d:00","available_seats":{"basic_economy":%d,"economy":%d,"business":%d},"prices":{"basic_economy":%d,"economy":%d,"business":%d}}`,
							v.n(1, 999), h, v.n(0, 5)*10, (h+v.n(1, 6))%24, v.n(0, 5)*10, v.n(0, 20), v.n(0, 20), v.n(0, 9), v.n(50, 120), v.n(120, 400), v.n(400, 1500))
					}
					b.WriteString(`]`)
					return b.String()
				}},
			{name: "update_reservation_flights",
				call: func(v *vocab) (string, string) {
					id := v.code(6, 0)
					return "The user confirmed. Updating reservation " + id + " to the new flight now.",
						`{"reservation_id":"` + id + `","cabin":"` + v.pick("economy", "business") + `","flights":[{"flight_number":"HAT` + v.code(0, 3) +
							`","date":"` + v.date() + `"}],"payment_id":"credit_card_` + v.code(0, 7) + `"}`
				},
				result: func(v *vocab) string {
					return `{"reservation_id":"` + v.code(6, 0) + `","status":"updated","fare_difference":` + strconv.Itoa(v.n(-300, 450)) +
						`,"charged_to":"credit_card_` + v.code(0, 7) + `","confirmation_email":"sent"}`
				}},
			{name: "get_user_details",
				call: func(v *vocab) (string, string) {
					id := strings.ToLower(v.pick(firstNames...)) + "_" + strings.ToLower(v.pick(lastNames...)) + "_" + v.code(0, 4)
					return "First I need to verify the account " + id + ".", `{"user_id":"` + id + `"}`
				},
				result: func(v *vocab) string {
					n := v.name()
					return `{"name":"` + n + `","email":"` + v.email(n) + `","membership":"` + v.pick("regular", "silver", "gold") +
						`","payment_methods":{"credit_card_` + v.code(0, 7) + `":{"brand":"` + v.pick("visa", "mastercard", "amex") +
						`","last_four":"` + v.code(0, 4) + `"},"gift_card_` + v.code(0, 7) + `":{"amount":` + strconv.Itoa(v.n(0, 300)) +
						`}},"reservations":["` + v.code(6, 0) + `","` + v.code(6, 0) + `","` + v.code(6, 0) + `"]}`
				}},
		},
		ask: func(v *vocab) string {
			return v.pick("Hi, this is "+v.name()+". ", "Hello! ", "Hey there, ", "Good morning. ") +
				v.pick("I need to move my flight from "+v.pick(airports...)+" to "+v.pick(airports...)+" to a later date, ",
					"I want to cancel my trip to "+v.pick(airports...)+" because of a family emergency, ",
					"can you upgrade my booking to business class for the flight on "+v.date()+", ",
					"I was charged twice for reservation "+v.code(6, 0)+" and need a refund, ",
					"I would like to add a checked bag and travel insurance to my reservation, ") +
				v.pick("ideally on "+v.date()+" in the afternoon. ", "my user id is "+strings.ToLower(v.pick(firstNames...))+"_"+v.code(0, 4)+". ",
					"the reservation number is "+v.code(6, 0)+". ", "I booked it through your app last week. ") +
				v.pick("Please keep the same cabin and use my card on file.", "If there is a fare difference I can pay up to "+strconv.Itoa(v.n(50, 400))+" dollars.",
					"I am a gold member, does that waive the change fee?", "Thanks a lot for your help.", "What are my options?")
		},
		answer: func(v *vocab) (string, string) {
			return v.pick("All done: your reservation now has flight HAT"+v.code(0, 3)+" on "+v.date()+", ",
				"I have cancelled the reservation and the refund of "+v.money()+" dollars goes back to your original payment method, ",
				"Your booking is updated to business class; the difference of "+v.money()+" dollars was charged to your card, ") +
				v.pick("and a confirmation email is on its way. ", "which takes 5 to 7 business days to show up. ", "and your seat assignment stays the same. ") +
				"Case reference ", "." + v.pick(" Is there anything else I can help you with?", " Have a safe trip!", " Let me know if you need another change.")
		},
	},
	{
		agent: "order-assistant", agentID: "asst_0rd3rs", description: "Handles orders, returns and exchanges for an online store",
		system: "You are a retail support agent for an online store. Authenticate the user by email or name and zip code, then help with " +
			"order status, returns, exchanges and address changes. Items can be exchanged only for the same product type. List the " +
			"details of an action and get an explicit yes before calling a tool that changes an order.",
		models: []string{"gpt-4o", "claude-sonnet-4", "gpt-4.1-mini"},
		tools: []toolKind{
			{name: "find_user_id_by_name_zip",
				call: func(v *vocab) (string, string) {
					return "Let me find your account.", `{"first_name":"` + v.pick(firstNames...) + `","last_name":"` + v.pick(lastNames...) +
						`","zip":"` + v.code(0, 5) + `"}`
				},
				result: func(v *vocab) string {
					return `"` + strings.ToLower(v.pick(firstNames...)) + "_" + strings.ToLower(v.pick(lastNames...)) + "_" + v.code(0, 4) + `"`
				}},
			{name: "get_order_details",
				call: func(v *vocab) (string, string) {
					id := "#W" + v.code(0, 7)
					return v.pick("Checking order "+id+".", "I'll look at order "+id+" to see its items."), `{"order_id":"` + id + `"}`
				},
				result: func(v *vocab) string {
					var b strings.Builder
					fmt.Fprintf(&b, `{"order_id":"#W%07d","status":"%s","address":{"address1":"%d %s Street","city":"%s","zip":"%05d"},"items":[`,
						v.n(0, 9999999), v.pick("delivered", "pending", "processed", "shipped"), v.n(1, 999), v.pick(lastNames...), v.pick("Austin", "Denver", "Columbus", "Portland", "Raleigh"), v.n(10000, 99999))
					for i := range v.n(1, 2) {
						if i > 0 {
							b.WriteString(`,`)
						}
						fmt.Fprintf(&b, `{"name":"%s","item_id":"%010d","options":{"color":"%s","size":"%s"},"price":%s}`,
							v.pick(products...), v.n(0, 2000000000), v.pick(colors...), v.pick("S", "M", "L", "XL", "one size"), v.money())
					}
					fmt.Fprintf(&b, `],"payment_history":[{"transaction_type":"payment","amount":%s,"payment_method_id":"paypal_%07d"}]}`, v.money(), v.n(0, 9999999))
					return b.String()
				}},
			{name: "exchange_delivered_order_items",
				call: func(v *vocab) (string, string) {
					return "You confirmed the exchange, so I'm submitting it now.",
						`{"order_id":"#W` + v.code(0, 7) + `","item_ids":["` + v.code(0, 10) + `"],"new_item_ids":["` + v.code(0, 10) +
							`"],"payment_method_id":"gift_card_` + v.code(0, 7) + `"}`
				},
				result: func(v *vocab) string {
					return `{"order_id":"#W` + v.code(0, 7) + `","status":"exchange requested","exchange_items":["` + v.code(0, 10) +
						`"],"exchange_price_difference":` + v.money() + `,"return_label":"https://returns.example.com/l/` + v.code(4, 8) + `"}`
				}},
			{name: "get_product_details",
				call: func(v *vocab) (string, string) {
					p := v.pick(products...)
					return "Let me see which options of the " + p + " are in stock.", `{"product_id":"` + v.code(0, 10) + `"}`
				},
				result: func(v *vocab) string {
					var b strings.Builder
					fmt.Fprintf(&b, `{"name":"%s","product_id":"%010d","variants":{`, v.pick(products...), v.n(0, 2000000000))
					for i := range v.n(2, 3) {
						if i > 0 {
							b.WriteString(`,`)
						}
						fmt.Fprintf(&b, `"%010d":{"options":{"color":"%s","capacity":"%dml"},"available":%t,"price":%s}`,
							v.n(0, 2000000000), v.pick(colors...), 250*v.n(1, 4), v.n(0, 3) > 0, v.money())
					}
					b.WriteString(`}}`)
					return b.String()
				}},
		},
		ask: func(v *vocab) string {
			return v.pick("Hi, I'm "+v.name()+" from zip "+v.code(0, 5)+". ", "Hello, my email is "+v.email(v.name())+". ", "Hi there. ") +
				v.pick("The "+v.pick(products...)+" I ordered arrived in the wrong color, I wanted "+v.pick(colors...)+". ",
					"I'd like to return the "+v.pick(products...)+" from order #W"+v.code(0, 7)+", it stopped working after two days. ",
					"Where is my order? It has said processing for a week. ",
					"Can I exchange the "+v.pick(products...)+" for a bigger size? ",
					"I need to change the shipping address of my last order before it ships. ") +
				v.pick("I'd prefer a refund to my gift card.", "Please use the same payment method.", "It was a birthday present so it is a bit urgent.",
					"The box is unopened.", "Thanks!")
		},
		answer: func(v *vocab) (string, string) {
			return v.pick("Your exchange is submitted: you'll get an email with a return label, and the new item ships once we receive the old one. ",
				"The return is processed; "+v.money()+" dollars will be refunded to your original payment method within 7 business days. ",
				"Your order is on its way and should arrive by "+v.date()+"; here is the tracking number 1Z"+v.code(0, 12)+". ") +
				"Reference ", " for this request." + v.pick(" Anything else?", " Have a great day!", "")
		},
	},
	{
		agent: "it-helpdesk", agentID: "asst_h3lpd35k", description: "First-line IT support for employees",
		system: "You are the company's IT helpdesk assistant. Diagnose before you act, search the knowledge base first, never ask for " +
			"passwords, and open or update a ticket for anything you cannot fix. Escalate security incidents to the on-call engineer at once.",
		models: []string{"gpt-4o-mini", "gpt-4.1", "llama-3.3-70b-instruct"},
		tools: []toolKind{
			{name: "search_kb",
				call: func(v *vocab) (string, string) {
					a := v.pick(apps...)
					return "Let me check the knowledge base for known issues with " + a + ".", `{"query":"` + a + ` ` + v.pick("login loop", "crash on start", "sync error", "certificate expired", "slow") + `","limit":3}`
				},
				result: func(v *vocab) string {
					var b strings.Builder
					b.WriteString(`{"articles":[`)
					for i := range 2 {
						if i > 0 {
							b.WriteString(`,`)
						}
						a := v.pick(apps...)
						fmt.Fprintf(&b, `{"id":"KB%05d","title":"%s: %s","snippet":"%s %s"}`, v.n(100, 99999), a,
							v.pick("sign-in keeps asking for credentials", "fails after the latest update", "cannot reach the server", "shows a certificate warning"),
							v.pick("Clear the cached credentials in the keychain,", "Reinstall from the software center,", "Check that the device is enrolled in MDM,", "Remove the old profile,"),
							v.pick("then restart and sign in again with SSO.", "then reconnect to the corporate network.", "and make sure the clock is in sync.", "and ask the user to update the OS."))
					}
					b.WriteString(`]}`)
					return b.String()
				}},
			{name: "run_diagnostic",
				call: func(v *vocab) (string, string) {
					h := v.pick(hosts...)
					return "I'll run a quick diagnostic on " + h + ".", `{"host":"` + h + `","check":"` + v.pick("disk", "dns", "tls", "connectivity", "services") + `"}`
				},
				result: func(v *vocab) string {
					return `{"host":"` + v.pick(hosts...) + `","status":"` + v.pick("ok", "degraded", "failed") + `","latency_ms":` + strconv.Itoa(v.n(1, 900)) +
						`,"disk_free_pct":` + strconv.Itoa(v.n(2, 80)) + `,"cert_expires":"` + v.date() + `","details":"` +
						v.pick("ping ok, tls handshake ok, dns resolves to 10.0."+strconv.Itoa(v.n(0, 255))+"."+strconv.Itoa(v.n(1, 254)),
							"service sshd running, service nginx restarting ("+strconv.Itoa(v.n(2, 40))+" restarts in the last hour)",
							"root volume at "+strconv.Itoa(v.n(85, 99))+" percent, journal logs use "+strconv.Itoa(v.n(2, 30))+" GB") + `"}`
				}},
			{name: "update_ticket",
				call: func(v *vocab) (string, string) {
					return "I'm recording this on a ticket so the team can follow up.",
						`{"ticket_id":"INC` + v.code(0, 7) + `","status":"` + v.pick("in_progress", "resolved", "escalated") + `","note":"` +
							v.pick("user reports "+v.pick(apps...)+" failing since this morning", "restarted the service, monitoring", "escalated to on-call, possible phishing") + `"}`
				},
				result: func(v *vocab) string {
					return `{"ticket_id":"INC` + v.code(0, 7) + `","status":"` + v.pick("in_progress", "resolved", "escalated") + `","assignee":"` + v.name() +
						`","sla_due":"` + v.date() + `T` + strconv.Itoa(v.n(10, 23)) + `:00:00Z"}`
				}},
		},
		ask: func(v *vocab) string {
			return v.pick("Hi, ", "Hello IT, ", "Urgent: ", "Morning, ") +
				v.pick(v.pick(apps...)+" keeps logging me out every few minutes",
					"I can't connect to "+v.pick(hosts...)+" since the maintenance last night",
					"I got an email asking me to confirm my password on a strange site and I clicked the link",
					"my laptop says the disk is full and "+v.pick(apps...)+" won't open",
					"I need access to the shared drive for the "+v.pick("finance", "design", "sales", "legal")+" team") +
				v.pick(". I'm on a deadline today.", ". It started after the update.", ", error code 0x"+v.code(0, 6)+".", ". Can you help?", ". My manager approved it.")
		},
		answer: func(v *vocab) (string, string) {
			return v.pick("That should be fixed now: I cleared the stale session and restarted the service. ",
				"I could not fix this remotely, so I escalated it to the on-call engineer who will call you within 30 minutes. ",
				"Access is granted; it can take up to 15 minutes to show up after you sign out and back in. ") +
				"Your ticket is tagged ", "." + v.pick(" Please reply here if it happens again.", " Don't enter your password on links from email.", "")
		},
	},
	{
		agent: "research-assistant", agentID: "asst_r353arch", description: "Searches the web and summarizes sources with citations",
		system: "You are a research assistant. Search before you answer, read at least two sources, prefer peer-reviewed work and " +
			"official statistics, quote numbers with their source and year, and say plainly when sources disagree or evidence is thin.",
		models: []string{"gpt-4.1", "claude-sonnet-4", "gemini-2.5-pro"},
		tools: []toolKind{
			{name: "web_search",
				call: func(v *vocab) (string, string) {
					t := v.pick(topics...)
					return "I'll search for recent sources on " + t + ".", `{"query":"` + t + ` ` + v.pick("2025 review", "meta-analysis", "latest data", "explained") + `","num_results":5}`
				},
				result: func(v *vocab) string {
					var b strings.Builder
					b.WriteString(`{"results":[`)
					for i := range 2 {
						if i > 0 {
							b.WriteString(`,`)
						}
						t := v.pick(topics...)
						fmt.Fprintf(&b, `{"title":"%s: %s","url":"https://%s/%s/%d","snippet":"%s %d %s"}`, strings.ToUpper(t[:1])+t[1:],
							v.pick("a systematic review", "what the data shows", "new results", "progress and open questions"),
							v.pick("www.nature.example", "arxiv.example.org", "www.iea.example", "journals.example.com", "www.who.example"),
							strings.ReplaceAll(t, " ", "-"), v.n(2019, 2026),
							v.pick("Across studies published since", "A survey of measurements up to", "Field trials in"), v.n(2015, 2025),
							v.pick("found effects smaller than first reported.", "show a steady improvement of about "+strconv.Itoa(v.n(3, 40))+" percent a year.",
								"remain limited by small samples and short follow-up.", "suggest costs fall with deployment scale."))
					}
					b.WriteString(`]}`)
					return b.String()
				}},
			{name: "fetch_page",
				call: func(v *vocab) (string, string) {
					u := "https://" + v.pick("arxiv.example.org/abs/", "www.nature.example/articles/", "www.iea.example/reports/") + v.code(0, 4) + "." + v.code(0, 5)
					return "Reading the most relevant source in full.", `{"url":"` + u + `","max_chars":2000}`
				},
				result: func(v *vocab) string {
					t := v.pick(topics...)
					return `{"title":"` + strings.ToUpper(t[:1]) + t[1:] + `","published":"` + v.pick(months...) + ` ` + strconv.Itoa(v.n(2020, 2026)) +
						`","text":"Abstract. We review ` + strconv.Itoa(v.n(12, 340)) + ` studies of ` + t + ` published between ` +
						strconv.Itoa(v.n(2005, 2015)) + ` and ` + strconv.Itoa(v.n(2020, 2025)) + `. ` +
						v.pick("The pooled estimate is "+strconv.Itoa(v.n(5, 60))+" percent with wide confidence intervals. ",
							"Most gains came from manufacturing improvements rather than new chemistry. ",
							"Results depend strongly on the measurement protocol, which varies between labs. ") +
						v.pick("We find no evidence of publication bias.", "Long-term data beyond five years is scarce.", "Policy implications are discussed in section 5.") + `"}`
				}},
		},
		ask: func(v *vocab) string {
			return v.pick("Can you summarize what is known about ", "I'm writing a briefing on ", "What's the current consensus on ", "Give me the key numbers on ") +
				v.pick(topics...) + v.pick("? Keep it under 200 words.", ", with sources from the last five years.", "? I need it for a meeting tomorrow.",
				", especially where experts disagree.", "? Please cite at least two sources.")
		},
		answer: func(v *vocab) (string, string) {
			return v.pick("In short: the evidence points to a moderate effect, about "+strconv.Itoa(v.n(5, 45))+" percent, but most studies are small. ",
				"Sources agree on the direction but not the size: estimates range from "+strconv.Itoa(v.n(2, 20))+" to "+strconv.Itoa(v.n(21, 70))+" percent. ",
				"The best data comes from a "+strconv.Itoa(v.n(2019, 2025))+" review of "+strconv.Itoa(v.n(20, 300))+" studies, which finds steady progress. ") +
				"Saved as note ", v.pick(" with the citations attached.", "; sources: the two reviews above.", ".")
		},
	},
}
