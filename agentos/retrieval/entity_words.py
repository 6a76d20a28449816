"""General English word lists for rule-based entity extraction (retrieval.entities).

Nothing here knows any dataset, speaker or topic: function words, common words that start
sentences, relationship nouns, and the words that say what kind of thing a name is.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Never an entity, wherever they stand (compared in lower case, the part before an apostrophe: "what's" -> "what").
STOP = _words("""
a an the this that these those some any each every either neither no nor not all both half
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves one ones oneself
who whom whose which what whatever whoever when where why how whenever wherever
and or but if then else so because as than though although while whereas unless until since whether yet
of in on at to for from by with without within into onto upon about above below under over after before between
among through during against toward towards across along around behind beyond near off out up down per via
is am are was were be been being have has had having do does did doing done will would shall should can could
may might must ought need dare let lets
don doesn didn isn aren wasn weren haven hasn hadn won wouldn shouldn couldn can't cannot mustn
here there now just also only even still already again ever never always often sometimes usually soon
very too quite rather really pretty so such much many more most less least few lot lots
hey hi hello hiya howdy yo bye goodbye ok okay yes yeah yep yup no nope nah sure oh ah aw aww wow whoa
yay hooray hmm um uh er erm huh ha haha hahaha lol lmao omg btw tbh idk imo fyi thx ty pls
woah woohoo whoo oof ooh oops phew mmm yum ugh meh yea awww aha gotcha ttyl bummer geez jeez wowza
thanks thank please sorry congrats congratulations cheers welcome
well anyway anyways alright right indeed actually honestly seriously totally definitely absolutely exactly
today tomorrow yesterday tonight morning afternoon evening night weekend weekday week month year day
monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
january february march april june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
spring summer autumn fall winter
gonna wanna gotta kinda sorta lemme gimme dunno ya
mr mrs ms mx dr prof sir madam
""")

# Not an entity when alone at the start of a sentence (elsewhere a capital means a name): common words that
# open sentences.
COMMON = _words("""
love loved loving like liked hope hoped think thought feel felt know knew guess wish want wanted glad happy
sad proud excited lucky grateful thankful sounds sound looks look seems seem seemed maybe perhaps probably
anything something nothing everything everyone everybody someone somebody anyone anybody nobody none
people person family friends friend life work job school home house music art book books movie movies film
sports game games nature food dinner lunch breakfast coffee tea painting reading writing cooking running
being having getting going doing making taking keep take make see check try enjoy stay remember imagine
tell share have go come get give put find call ask play watch read write listen wait stop start
great good nice cool awesome amazing wonderful fantastic beautiful lovely sweet fun true same agreed
interesting exciting important hard easy best better worse worst first last next other another new old
big small little long short high low sometimes speaking talking thinking hoping planning trying
definitely certainly luckily hopefully unfortunately fortunately finally recently lately basically
apparently anyways plus besides instead otherwise meanwhile afterwards later earlier once twice
two three four five six seven eight nine ten hundred thousand
kids kid children child parents mom dad brother sister baby dog dogs cat cats pet pets
appreciate appreciated got get gets talk talking catch bet remind reminds believe hang cherish heard hear took
count mind care turn way thing things moment moments together super crazy funny tough cute however anytime
congrats keep kept sounds wish wishing man dude guys everyone totally nice glad good-luck
""")

# Inside a name, between capitalised words: "Bank of America", "Leonardo da Vinci", "Lord of the Rings".
JOINERS = _words("of de del della der den di da du la le van von the y")

# Titles dropped from the front of a name's key: "Mr. Smith" -> "smith".
TITLES = _words("mr mrs ms mx miss dr doc prof professor sir madam rev fr")

# A "." after these does not end a sentence.
ABBREVIATIONS = TITLES | _words("st mt jr sr vs etc approx dept est inc ltd co no")

# Relationship nouns (after "my", "our", "your", or a name's possessive), mapped to one canonical form.
RELATIONS: dict[str, str] = {
    **dict.fromkeys(["mom", "mum", "mommy", "mummy", "mama", "mother", "ma"], "mother"),
    **dict.fromkeys(["dad", "daddy", "papa", "father", "pa", "pops"], "father"),
    **dict.fromkeys(["parent", "parents", "folks"], "parent"),
    **dict.fromkeys(["grandma", "granny", "grandmother", "nana", "grandmom"], "grandmother"),
    **dict.fromkeys(["grandpa", "grandfather", "granddad", "grandad", "gramps"], "grandfather"),
    **dict.fromkeys(["grandparent", "grandparents"], "grandparent"),
    **dict.fromkeys(["sister", "sis"], "sister"),
    **dict.fromkeys(["brother", "bro"], "brother"),
    **dict.fromkeys(["sibling", "siblings"], "sibling"),
    **dict.fromkeys(["son"], "son"),
    **dict.fromkeys(["daughter"], "daughter"),
    **dict.fromkeys(["kid", "kids", "child", "children", "kiddo", "kiddos"], "child"),
    **dict.fromkeys(["baby", "babies", "newborn"], "baby"),
    **dict.fromkeys(["grandson", "granddaughter", "grandchild", "grandchildren", "grandkid", "grandkids"], "grandchild"),
    **dict.fromkeys(["aunt", "auntie", "aunty"], "aunt"),
    **dict.fromkeys(["uncle"], "uncle"),
    **dict.fromkeys(["cousin"], "cousin"),
    **dict.fromkeys(["niece"], "niece"),
    **dict.fromkeys(["nephew"], "nephew"),
    **dict.fromkeys(["twin"], "twin"),
    **dict.fromkeys(["family"], "family"),
    **dict.fromkeys(["husband", "hubby"], "husband"),
    **dict.fromkeys(["wife", "wifey"], "wife"),
    **dict.fromkeys(["spouse"], "spouse"),
    **dict.fromkeys(["partner"], "partner"),
    **dict.fromkeys(["boyfriend", "bf"], "boyfriend"),
    **dict.fromkeys(["girlfriend", "gf"], "girlfriend"),
    **dict.fromkeys(["fiance", "fiancé", "fiancee", "fiancée"], "fiance"),
    **dict.fromkeys(["ex"], "ex"),
    **dict.fromkeys(["friend", "buddy", "pal", "bestie", "bff", "mate"], "friend"),
    **dict.fromkeys(["roommate", "flatmate", "housemate"], "roommate"),
    **dict.fromkeys(["neighbor", "neighbour"], "neighbour"),
    **dict.fromkeys(["colleague", "coworker", "co-worker", "workmate"], "colleague"),
    **dict.fromkeys(["boss", "manager", "supervisor"], "boss"),
    **dict.fromkeys(["teacher", "professor", "tutor"], "teacher"),
    **dict.fromkeys(["mentor"], "mentor"),
    **dict.fromkeys(["coach"], "coach"),
    **dict.fromkeys(["therapist", "counselor", "counsellor"], "therapist"),
    **dict.fromkeys(["doctor", "doc"], "doctor"),
    **dict.fromkeys(["classmate"], "classmate"),
    **dict.fromkeys(["teammate"], "teammate"),
    **dict.fromkeys(["student"], "student"),
    **dict.fromkeys(["client"], "client"),
    **dict.fromkeys(["landlord", "landlady"], "landlord"),
    **dict.fromkeys(["pet"], "pet"),
    **dict.fromkeys(["dog", "puppy", "pup", "doggo"], "dog"),
    **dict.fromkeys(["cat", "kitty", "kitten"], "cat"),
    **dict.fromkeys(["horse", "pony"], "horse"),
    **dict.fromkeys(["bird", "parrot"], "bird"),
    **dict.fromkeys(["hamster", "rabbit", "bunny", "turtle", "fish"], "small pet"),
}

# Relationship words used as names ("I called Mom"): the speaker's relation, not an entity called "Mom".
VOCATIVE_RELATIONS = _words("mom mum mommy mummy mama dad daddy papa grandma grandpa granny nana grandad granddad")

# Words allowed between "my" and a relationship noun: "my little sister", "our two dogs".
RELATION_MODIFIERS = _words("""
little big older younger elder eldest oldest youngest best old new dear late ex step half twin baby grown adult
lovely beloved favorite favourite amazing wonderful sweet own first second third two three four five
""")

FIRST_PERSON = _words("i me my mine myself i'm i've i'd i'll im ive")
OWNERS_SELF = _words("my our")  # "my sister", "our dog": the speaker's
OWNERS_ADDRESSEE = _words("your")  # "your sister": the addressee's

# The last word of a name says what kind of thing it is (otherwise it is just a "name").
ORGANISATION_WORDS = _words("""
inc corp corporation company co ltd llc group university college school academy institute foundation association
society club bank church council committee agency department ministry hospital clinic center centre team union
party band orchestra choir league network studio studios labs lab press news times magazine
""")
PLACE_WORDS = _words("""
city town village county state province country street st road rd avenue ave boulevard lane park lake river
mountain mountains mount mt beach island islands bay valley hill hills forest canyon falls coast desert ocean sea
airport station square bridge museum gallery library zoo garden gardens cafe restaurant bar hotel mall market
""")
EVENT_WORDS = _words("""
festival conference convention fair parade marathon race party championship championships cup tournament concert
tour show expo summit wedding ceremony day night week games olympics election
""")
