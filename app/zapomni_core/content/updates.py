"""When a newer memory makes an older one no longer current: rules over sentences, no model.

A person reading "Our office is on Baker Street" (January) and "Update: we moved the office to 14 Kings Road"
(March) knows the first is outdated. These rules read what that person reads, one sentence of each memory
against one of the other:

- the subject: who or what the sentence is about. "I", "we", "my", "our" are its speaker (the memory's speaker,
  or the workspace's owner for a note without one); "my sister", "our dog" are the speaker's sister and dog; a
  name that leads the sentence ("Marco moved", "Priya's number") is that person or pet. Two subjects that differ
  are two people, or two pets: never an update.
- the attribute: which of a fixed set of things the subject holds (`ATTRIBUTES`: home, work, phone, ...). Most
  hold one value at a time (functional: a new home replaces the old one); some do not (pets, hobbies, tools: a
  second one adds), and those need a cue.
- cues in the newer sentence: a change ("now", "moved", "switched", "instead", "actually") or an end ("no longer",
  "quit", "used to"), and what rules a link out: a plan or a wish ("thinking about moving"), a question, the past
  told again ("back in 2019"), a second item ("also"), the same value kept ("still").
- the value: the words that fill the attribute (names, numbers, what follows "to", "at", "in", "is"); a newer
  sentence with no value the older lacks, and no end cue, restates the fact.
- a story's outcome: a step with an outcome to come ("I had an interview for a design internship") is replaced by
  how it turned out ("I got accepted for a fashion internship"), told by the same subject of the same thing.

The memory embeddings decide which older memories are read at all (the nearest few) and add to the confidence.
Each link carries its evidence: the attribute, the subject, the cues and the newer sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import pairwise

# The attributes a subject holds, each with the words that say a sentence is about it, and whether it holds one
# value at a time (a different value then replaces the old one without a cue).
_ATTRIBUTE_WORDS: dict[str, tuple[bool, str]] = {
    "home": (
        True,
        r"live[sd]?|living|moved|moving|relocat\w*|apartment|house|home|address|neighbou?rhood|lease|"
        r"settled|settling (?:in|into)|rent(?:ing|ed)?|place",
    ),
    "work": (
        True,
        r"work(?:s|ed|ing)?\s+(?:at|for|as|in)|(?:my|his|her|their|our|your|a|new|old|the|day) jobs?|"
        r"jobs? (?:at|as|with)|employ\w*|unemployed|jobless|between jobs|looking for (?:a )?(?:job|work)|hired|"
        r"company|position|role|career|quit|"
        r"laid off|fired|promot\w*|retir\w*|joined|occupation|(?:assistant|store|office|general|product|project|"
        r"account|sales|program|engineering) manager|profession|freelanc\w*|business|startup|banker|"
        r"transferred|teach(?:es|ing)?|engineer|analyst|scientist|consultant|designer|developer|teacher|nurse|"
        r"lawyer|advis[eo]r|director|ceo|cto|cfo|founder|pm|intern(?:ship)?s?|professor|researcher|accountant|architect|chef",
    ),
    "office": (True, r"office|offices|headquarters|hq|coworking|co-working|wework|desk"),
    "phone": (True, r"phone|number|mobile|cell|landline|whatsapp|reach (?:me|him|her|us|them)"),
    "password": (True, r"password|passcode|pin|wi-?fi|pw|logins?|door code|gate code|garage code|code is"),
    "email": (True, r"e-?mail|inbox|[\w.+-]+@[\w-]+\.[\w.]+"),
    "name": (
        True,
        r"name|named|renamed|nickname|surname|goes by|go by|call(?:s|ed)? (?:me|him|her|them|it)|(?:be|being) called",
    ),
    "favourite": (True, r"favou?rites?|prefer\w*|go-to|like[sd]? best|love[sd]? best"),
    "relationship": (
        True,
        r"dating|married|marry|girlfriend|boyfriend|partner|wife|husband|fianc[eé]e?|engaged|divorc\w*|single|"
        r"broke up|split up|seeing someone",
    ),
    # "a food drive", "the hard drive" are no driving
    "vehicle": (
        True,
        r"car|cars|(?<!a )(?<!the )(?<!food )(?<!hard )(?<!toy )drives?|drove|driving|vehicle|motorbike|motorcycle|"
        r"scooter|truck|van|commute\w*|"
        # makes and models no other word means ("Picked up the keys to a used Mazda")
        r"toyota|honda|civic|corolla|prius|mazda|tesla|bmw|audi|mercedes|volkswagen|vw|kia|hyundai|renault|peugeot|"
        r"fiat|volvo|subaru|nissan|chevy|chevrolet|jeep|skoda|porsche|lexus",
    ),
    "study": (
        True,
        r"stud(?:y|ies|ying|ied)|major(?:s|ed|ing)?|school|university|college|degree|course|student|phd|"
        r"master'?s|bootcamp|thesis|grade|sophomore|junior|senior year|freshman|semester|graduat\w*",
    ),
    "price": (
        True,
        r"price|prices|costs?|budget|salary|rate|fees?|charges?|charged|subscription|rent|paid|pay|membership|"
        r"[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros|pounds|bucks)",
    ),
    "age": (
        True,
        r"\d+\s+years?\s+old|age|turn(?:ed|s)\s+\d+|birthday|(?:is|are)\s+\d{1,3}(?![\d.,:/%-]|\s*(?:kg|lb|am|pm))",
    ),
    "measure": (True, r"weighs?|weighed|kg|lbs|pounds|height|tall|cm|blood pressure|bp|cholesterol|a1c"),
    "health": (
        True,
        r"doctor|dentist|therapist|physio\w*|gp|medication|meds|dose|dosage|injur\w*|surgery|diagnos\w*|"
        r"\d+\s?mg|prescri\w*|vet|veterinarian",
    ),
    # one can be allergic to several things: a second allergy adds, unless one is said to be gone
    "allergy": (False, r"allerg\w*|intolerant"),
    "schedule": (
        True,
        r"meeting|meetings|stand-?up|sync|appointment|shift|schedule|rehears\w*|practice|lessons?|class|classes|"
        r"deadline|due|launch|release|go-live|mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|"
        r"sundays?|\d{1,2}(?::\d\d)?\s*(?:am|pm)|\d{1,2}:\d\d|wakes? up|gets? up|bedtime|goes to bed|"
        r"in the (?:mornings?|afternoons?|evenings?)",
    ),
    "team": (
        True,
        r"team|department|squad|club|fc|plays? (?:\w+ )?for|signed with|transferred|supports?|roots? for|fan of",
    ),
    # whom one answers to, and who guides one: people, not the group one is in ("meets her mentor" is no club)
    "manager": (True, r"manager|managers|lead|leads|reports? to|reporting to"),
    "mentor": (True, r"mentor|coach"),
    "diet": (True, r"vegetarian|vegan|diet|meat|gluten|keto|dairy|lactose|sugar|caffeine|alcohol|sober|eats?|eating"),
    # one drinks several things: green tea and black tea, coffee in the morning and tea at night
    "drink": (False, r"coffees?|teas?|milk|drinks?|drinking"),
    "pet": (False, r"dogs?|cats?|pets?|puppy|puppies|kitten|parrot|hamster|rabbit|bunny|fish|turtle|horse"),
    "tool": (
        False,
        r"uses?|used|using|switched|editor|ide|laptop|browser|framework|library|language|stack|database|app|"
        r"tool|tools|software|keyboard|camera|phone|coding|codes? in|password manager",
    ),
    "hobby": (
        False,
        r"hobby|hobbies|plays?|playing|learning|painting|guitar|piano|running|climbing|dancing|dance|reads?|"
        r"volunteer\w*|gaming|reading|cooking|baking|gardening|been into|bouldering|climbing|yoga|pottery|"
        r"swim(?:s|ming)?|surfing|cycling|hiking|knitting|chess|run|runs|marathons?|tennis|football|soccer|"
        r"basketball|golf|badminton|squash|volleyball|rugby|hockey|skiing|snowboarding|boxing|karate|judo|rowing",
    ),
}
FUNCTIONAL = frozenset(name for name, (functional, _) in _ATTRIBUTE_WORDS.items() if functional)
_WORD_START = r"(?<![\w$€£¥])"
ATTRIBUTES: dict[str, re.Pattern[str]] = {
    name: re.compile(rf"{_WORD_START}(?:{words})(?!\w)") for name, (_functional, words) in _ATTRIBUTE_WORDS.items()
}
# Whether a sentence names any attribute at all: one search, the start of a word checked once (a third of the time
# of the searches one by one; most sentences name none).
_ANY_ATTRIBUTE = re.compile(
    _WORD_START + "(?:" + "|".join(f"(?:{words})(?!\\w)" for _functional, words in _ATTRIBUTE_WORDS.values()) + ")"
)

# Cues read in the newer sentence. An end says the older value stopped being true, with or without a new one.
_ENDING = re.compile(
    r"\b(?:no longer|not anymore|anymore|any more|used to|quit|quitting|left|leaving|"
    r"lost (?:my|our|his|her|their) \w+|laid off|got fired|was fired|broke up|split up|divorced|sold|retired|"
    r"ended(?! up)|stopped|gave up|passed away|step(?:ped|ping) down|resigned|"
    r"died|closed|shut down|former|formerly|ex-\w+|moved out|moved away|cancell?ed|dropped|not with|deleted|graduated|"
    r"uninstalled|gone off|went off|stopped|(?:take|took|taking) a break from|on hold|paused|"
    # the end of a state in progress: "working on my book" is over once it is finished
    r"finished|completed|got it done|passed (?:the|my)|opened (?:my|our|the)|launched|"
    # "Handed billing off to Rashida": the work is someone else's now
    r"hand(?:ed|ing) (?:\w+ ){0,3}?(?:off|over))\b"
)
_CHANGE = re.compile(
    r"\b(?:moved|moving to|move to|changed|instead(?! of \w+ing)|switched|switching|update|updated|"
    r"correction|corrected|replaced|transferred|relocated|migrated|rescheduled|postponed|"
    r"(?:up|down)grad(?:ed|ing) (?:from|to)|"
    r"pushed (?:back|to)|brought forward|renamed|became an?|promoted|not \w+ but|(?:was|had it|got it) wrong|"
    r"bumped|(?:got|been|was|were|am|is) put on|"
    r"raised|lowered|increased|decreased|settling in(?:to)?|got (?:engaged|married|divorced))\b"
)
_CURRENT = re.compile(r"\b(?:now|these days|nowadays|currently|as of)\b")
# Weaker: a new value is news, but the sentence would say this of a first value too. "Now" says a value is the
# current one, not that there was another.
# "Actually" corrects when it opens a sentence; inside one it is a filler ("they actually didn't ...").
_ACTUALLY = re.compile(r"^(?:\W*(?:oh|well|so|but|and|no|wait|um|hmm)\W+)?actually\b")
_NEWS = re.compile(
    r"\b(?:new|started|starting|start|just|recently|since|finally|got a|signed|joined|bought|adopted|hired|"
    r"accepted|took|taking over|going with|went with|picked|again|first week|"
    r"now|these days|nowadays|currently|as of)\b"
)
# Ends that say nothing without the thing that ended: "I used to compete", "just finished a book".
_NAMING_ENDS = frozenset("used to finished completed got it done launched".split()) | {"used to", "got it done"}
# What rules a sentence out as the newer side: a plan or wish is no change yet, a second item adds, "still" keeps.
_WISH = re.compile(
    r"\b(?:thinking (?:about|of)|might|maybe|perhaps|considering|consider|want(?:s|ed)? to(?! be called| go by)|"
    r"would (?:like|love)|"
    r"'d (?:like|love)|hope|hopes|hoping|wish|someday|some day|one day|dream(?:s|ing)? (?:of|about)|"
    r"looking (?:at|into)|tempted|could|should|if|unless|fingers crossed|part of me|interview(?:ing)? (?:at|with|for)|"
    r"appl(?:y|ied|ying) (?:to|for)|not sure|let's|lets|let us|shall we)\b"
)
_PLAN = re.compile(
    r"\b(?:plan(?:s|ning)? (?:to|on)|gonna|(?<!stopped )(?<!started )(?<!quit )(?<!been )(?<!kept )going to|will|'ll|"
    r"next (?:year|month|week|spring|summer|fall|autumn|"
    r"winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b"
)
# A plan that says the fact changed is a change: "the launch will be on May 3 instead".
_PLAN_OVERRIDE = re.compile(
    r"\b(?:instead|changed|moved|rescheduled|postponed|pushed (?:back|to)|brought forward|no longer|now|actually)\b"
)
_ALSO = re.compile(
    # "either" as "too" ("Doesn't eat fish either"), not "either the bus or the train"
    r"\b(?:also|too|as well|another|second|in addition|additionally|both|plus|either(?![\w\s]{0,30}\bor\b))\b"
)
_ALSO_OVERRIDE = re.compile(r"\b(?:instead|no longer|replaced|switched|anymore|not anymore)\b")
_STILL = re.compile(r"\b(?:still|as always|as usual|same as (?:before|ever)|continues? to|keep(?:s)? (?:on )?\w+ing)\b")
# The past told again (in the newer sentence), or a past that was never a current fact (in the older one).
_RETOLD = re.compile(
    r"\b(?:back (?:in|when|then)|years ago|when (?:i|we|he|she|they) (?:was|were)|as a (?:kid|child|teen\w*)|"
    r"remember (?:when|the|that)|looking back|growing up|reminds? me|brings? back|those days|that time|"
    r"miss (?:those|the days)|(?:years?|months?|weeks?) since|can't believe it's been|anniversary|"
    r"(?:years?|a while|way) back|back in the day|(?:'cause|cause|because|since|after) (?:i|we|he|she|they) "
    r"(?:\w+ )?(?:lost|quit|left|sold|moved|got)|losing my)\b"
)
# A story told over time: a step that has an outcome to come, then the outcome. "Applied" is both: the outcome of
# researching, the step before an interview's result.
_ATTEMPT = re.compile(
    r"\b(?:interview(?:ed|ing)? (?:for|at|with)|(?:had|have|got) an interview|appl(?:y|ying|ied) (?:to|for)|"
    r"research(?:ing)?|search(?:ing)? for|looking for|hunting for|dream(?:s|ing|t)? (?:of|about)|"
    r"want(?:s|ed)? to|hop(?:e|ing) to|thinking (?:about|of)|invited (?:\w+ )?to|"
    r"start(?:ed|ing)? (?:on|writing|working)|working on|exploring|trying to|failed|waiting to hear|considering|"
    r"planning|(?:goal|aim|plan|dream) is to)\b"
)
_OUTCOME = re.compile(
    # "got into a bad spot with some people" is no admission
    r"\b(?:got (?:accepted|in(?:to)?\b(?! (?:a |an |some )?(?:bad|trouble|fight|argument|mess|accident|spot|shape)\b)|"
    r"hired|the job|the offer|the part)|(?:was|been|am|i'm) accepted|passed|"
    r"appl(?:ied) (?:to|for)|finished|wrapped up|completed|got it done|went to|visited|signed|"
    r"started (?:a|an|my|the)|took the plunge|opened|launched|retook|adopted|bought|won|published|graduated|"
    r"ran (?:the|a|my|his|her|their))\b"
)
# In a note only: "Wants to learn the guitar", then "Started taking guitar lessons". A chat says so of what it tells
# again ("why I started playing basketball") and of what is no outcome ("took up some community work").
_NOTE_OUTCOME = re.compile(r"\b(?:started (?:taking|learning|playing|going to)|signed up for|enrolled in|took up)\b")
# Going somewhere is the outcome of wanting to go ("I dream of visiting them one day"), not of working on something.
_GOING = frozenset({"went to", "visited"})
_AIMS = re.compile(r"dream|want|hop|thinking|planning|considering")
# Below this two turns are not one story: every third turn of a chat says "finished" or "went to" something.
OUTCOME_SIMILARITY = 0.4
# An aim told of with a pronoun ("I read a book about castles in the UK. I dream of visiting them one day") is
# about what the memory named before it.
_REFERS = re.compile(r"\b(?:them|it|there|those|that place|one of them)\b")
# Something the subject does not do (any more, or lately), and something the subject is doing: "Mateo doesn't eat
# gluten", then "he's eating bread and pasta again"; "I haven't been able to volunteer lately", then "I'm
# volunteering as a mentor". The verb is group 1 (or 2).
_NOT_DOING = re.compile(
    r"\b(?:(?:haven't|hasn't|hadn't|have not|has not) (?:been able to|had (?:much |the |any )?time to|been)|"
    r"(?:doesn't|don't|does not|do not|can't|cannot|no longer|stopped|quit|gave up)) ([a-z]+)\b|"
    r"\b(?:haven't|hasn't|hadn't|have not|has not) ([a-z]+ed)\b"  # "hasn't climbed in months"
)
# Verbs that name no activity: "I don't think so", "don't worry", "I'm going to", "I'm feeling better".
_DOING_NOTHING = (
    "being having doing getting going making taking thinking knowing worrying minding remembering wanting needing "
    "meaning feeling caring saying seeing telling looking hearing waiting trying letting seeming sounding believing "
    "understanding expecting guessing liking loving hating using putting keeping coming giving finding hoping"
).split()
_DOING = re.compile(
    r"\b(?:i'm|i am|we're|we are|he's|she's|they're|he is|she is|they are)\s+"
    rf"(?:now\s+|back\s+|currently\s+|finally\s+|actually\s+)?(?!(?:{'|'.join(_DOING_NOTHING)})\b)([a-z]+ing)\b|"
    r"\b(?:started|resumed|began|back to|taken up|took up|goes|go) ([a-z]+ing)\b"
)
# Liking something, then not, or the other way round: "Enjoys jazz music", then "Can't stand jazz anymore". The
# bare "like" only after a person ("I like", "we like"): "things like that", "looks like" are no liking, nor "would
# like to" (a wish).
_LIKES = re.compile(
    r"\b(?:likes|loves|enjoys|adores|(?:is|am|are|i'm|we're) (?:a (?:big |huge )?fan of|into|fond of)|"
    r"(?:i|we|they|you) (?:really |still |now )?(?:like|love|enjoy|adore))\b"
)
_DISLIKES = re.compile(
    r"\b(?:dislikes?|hates?|detests?|can't stand|cannot stand|(?:doesn't|don't|does not|do not|no longer) "
    r"(?:like|love|enjoy)s?|(?:is|am|are|i'm|we're) (?:not|no longer) (?:a fan of|into|fond of)|"
    r"(?:isn't|aren't) (?:a fan of|into|fond of)|(?:is|am|are|i'm|we're) (?:sick|tired) of|(?:went|gone) off)\b"
)
# "Has two kids": a number and the words it counts.
_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
} | {"twice": "2", "once": "1"}
_TIMES = frozenset({"twice", "once"})
_COUNT = re.compile(rf"\b(\d+(?:[.,]\d+)?|{'|'.join(_NUMBER_WORDS)})\s+(?=((?:[a-z]+\s+)?[a-z]+))")
# "not allergic to penicillin": a negation and the words it denies.
_DENIAL = re.compile(r"\b(?:not|no longer|isn't|aren't|never|no)\s+((?:[a-z'-]+\s+){0,4}[a-z'-]+)")
# "Prefers tea over coffee": tea liked, coffee less ("prefers going to the gym" is no preference of going over a gym).
_PREFERS = re.compile(
    r"\bprefers? ((?:(?!to\b)[\w'-]+\s+){0,2}?(?!to\b)[\w'-]+)\s+(over|rather than|instead of|to)\s+([^,.;:!?]+)"
)
_PREFERRED = re.compile(r"\bprefers?\s+(?!to\b)")
_CONNECTOR = re.compile(r"\s(?:over|rather than|instead of|to)\s")
# A diet and the foods it leaves out: "Is a vegetarian", then "Started eating fish again" (the plural's "s" dropped).
_MEAT = "meat fish chicken beef pork bacon steak lamb ham seafood salmon tuna turkey burger sausage shrimp prawn"
_DAIRY = "dairy cheese milk butter cream yogurt yoghurt"
_ANIMAL = f"{_MEAT} {_DAIRY} egg honey"
_ALCOHOL = "alcohol beer wine whisky whiskey vodka gin rum cocktail booze"
_DIETS: dict[str, frozenset[str]] = {
    "vegetarian": frozenset(_MEAT.split()),
    "vegan": frozenset(_ANIMAL.split()),
    "plant-based": frozenset(_ANIMAL.split()),
    "pescatarian": frozenset(_MEAT.split()) - {"fish", "seafood", "salmon", "tuna", "shrimp", "prawn"},
    "sober": frozenset(_ALCOHOL.split()),
    "teetotal": frozenset(_ALCOHOL.split()),
    "gluten-free": frozenset("gluten bread pasta wheat pizza".split()),
    "dairy-free": frozenset(_DAIRY.split()),
    "lactose intolerant": frozenset(_DAIRY.split()),
}
_FOODS = frozenset().union(*_DIETS.values())
_DIET = re.compile(rf"\b(?:{'|'.join(_DIETS)})\b")
_EATING = re.compile(r"\b(?:eats?|eating|ate|drinks?|drinking|drank|having|back (?:on|to))\b")
_NOT_EATING = re.compile(
    r"\b(?:doesn't|don't|does not|do not|no longer|stopped|quit|gave up|cut out|avoids?|avoiding|gone off|went off)"
    r"(?:\s+(?:eating|drinking|eat|drink))?\b"
)
# Words of four letters or more that name no topic.
_PLAIN = frozenset(
    "really great awesome amazing thanks thank glad hope think feel felt know want wanted make made time today "
    "week month year last next first much many something everything anything nothing always never even well "
    "good nice cool love loved happy excited little able since while though through back help need".split()
)


_OLD_PAST = re.compile(
    r"\b(?:used to|back (?:in|when|then)|years ago|when (?:i|we|he|she|they) (?:was|were)|as a (?:kid|child|"
    r"teen\w*)|growing up|remember (?:when|the|that))\b"
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n+\s*|(?<=[a-z0-9)])\s+[—–-]\s+|;\s+")
# ", so" joins a cause to what follows from it, which may have a subject of its own ("Eastside closed, so Pickle's
# vet is ...") or not ("My advisor convinced me, so the thesis is ..."): both readings are kept.
_SO = re.compile(r",\s+so\s+(?=\w)")
_LEADERS = re.compile(
    r"^(?:(?:update|updated|correction|fyi|btw|ps|p\.s\.|note|news|edit|heads up|quick update|big news|good news|"
    r"great news|sad news|change of plans?|plan change|quick thing|quick note|one more thing|psa|so|well|oh|ok|"
    r"okay|yeah|yep|yes|no|nope|hey|hi|hello|actually|"
    r"anyway|guess what|and|"
    r"but|just|lol|wow|haha|hmm|sorry|thanks|thank you|ugh|welp|alright|right|also|reminder|fun fact)"
    r"\b[\s,:!?.\-—–]*)+",
    re.IGNORECASE,
)
# A chat turn's opening after its greeting ("Hi Maria, since we last chatted, I'm volunteering"): in dozens of
# LoCoMo's turns, it would find those turns, not the ones about the same thing. Whom a turn greets is no topic either.
_OPENER = re.compile(r"^(?:since (?:we|i) last (?:talked|spoke|chatted)|since our last (?:chat|talk)|"
                     r"long time no (?:see|talk|chat))\b[\s,!.:]*", re.IGNORECASE)  # fmt: skip
# When it happened, before who did it: "In 2023 Priya moved ...", "Last summer, my sister ...".
_WHEN_FIRST = re.compile(
    r"^(?:(?:in|on|by|since|during)\s+(?:(?:early|late|mid)[\s-]+)?(?:[A-Z][a-z]+\s+)?\d{4}|"
    r"(?:last|this)\s+(?:year|month|week|spring|summer|autumn|fall|winter)|yesterday|today)\s*,?\s+",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^(?:hey|hi|hello|yo|dear)\s+[A-Z][\w'-]*[\s,!.:]*", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|me|my|mine|myself|we|we're|we've|we'd|we'll|us|our|ours)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|you're|you've|you'll|u)\b")
_THIRD_PERSON = re.compile(r"^(?:he|she|they|his|her|their|him|them)\b", re.IGNORECASE)
# Kin: whose facts a note of the owner's may tell without "my" ("Sister goes by Jo").
_KIN = (
    "sister|brother|mom|mum|mother|dad|father|parents|son|daughter|kids|children|wife|husband|partner|girlfriend|"
    "boyfriend|fianc[eé]e?|friend|roommate|flatmate|cousin|aunt|uncle|grandma|grandmother|grandpa|grandfather|"
    "niece|nephew"
)
_RELATIVES = (
    "dentist|doctor|vet|therapist|landlord|accountant|hairdresser|barber|plumber|mechanic|lawyer|"
    f"{_KIN}|kid|child|best friend|boss|manager|neighbou?r|colleague|coworker|co-worker|"
    "dog|cat|puppy|kitten|parrot|hamster|rabbit|bunny|horse|pet|fish|turtle"
)
# A note that states a fact in the present without a subject, or of "the user", is about its owner: memory tools
# write their memories so ("Lives in Lyon", "Is a vegetarian", "User's name is Bartek"). Without it, "Works as a
# barista" read "Works" as a name. A verb of the present opens it: one of these, or any word in "-s" that a word
# other than a verb follows ("Commutes by bike", "Mostly reads science fiction"; "James lives", "Lucas moved" and
# "Carlos and Ana" are people).
_OFTEN = (
    r"(?:(?:mostly|usually|often|always|never|still|currently|recently|now|only|rarely|sometimes|also|just|really|"
    r"actually|generally|normally|typically)\s+)?"
)
_PRESENT = re.compile(
    rf"(?i:{_OFTEN}(?:is|has|lives|works|drives|prefers|likes|loves|enjoys|hates|dislikes|plays|uses|owns|wants|"
    r"speaks|studies|eats|drinks|attends|teaches|runs|goes|codes|supports|can't|cannot|doesn't|does not|isn't|"
    r"hasn't|has not|no longer)\b)|"
    # not a chat's "Sounds great", "Looks like", "Thanks so much", nor a word in "-s" that is no verb ("This quote")
    rf"(?i:{_OFTEN}(?!(?:thanks|sounds|looks|seems|means|says|happens|depends|this|was|its|yes|besides|unless|"
    r"less|perhaps|always|congrats|plus)\b)[a-z]{2,}s)"
    r"(?=\s+(?!(?i:and|or|is|are|was|were|has|had|will|would|can|could|did|does|didn't|"
    r"doesn't|isn't|wasn't|just|also|still|never|always|now|finally|recently|told|said|got|went|ran|took|made|left|"
    r"came|gave|won|met|sold|bought|quit|began|became|grew|fell|broke|hit|kept|saw|felt|found|thought)\b)"
    r"(?![a-z]+s\b|[a-z]+ed\b)[a-z])"
)
# The words a note opens with to deny: "Not married", "Doesn't have a passport", "Can't cook".
_DENYING = r"not|never|doesn['’]t|don['’]t|can['’]t|cannot|isn['’]t|hasn['’]t|didn['’]t"
# A note's state told by its adjective and what it is of ("Allergic to penicillin", "Fluent in Greek"), or what the
# owner told ("The user mentioned living in Glasgow").
_OWNERS_STATE = re.compile(
    r"(?i:(?:allergic|intolerant|married|engaged|fluent|afraid|scared|based)\s+(?:to|in|of)\b|"
    r"(?:the\s+)?user\s+(?:mentioned|said|says|noted|stated|shared|explained|indicated|reported)\b)"
)
# So is a note that opens with an event's verb ("Switched to Neovim", "Quit tennis": "Quit" read as a name too), or
# with one of the owner's records ("Favourite colour is teal", "Phone number is ..."). Not with what the owner saw or
# met: "Saw Delphine's blue Fiat" is news of Delphine's.
_OWNERS_FACT = re.compile(
    rf"{_PRESENT.pattern}|(?i:(?:(?:the )?user(?:['’]s)?|"
    # what the owner is not, does not or cannot: "Not married", "Can't swim"
    rf"{_DENYING}|no longer|"
    r"moved|started|stopped|quit|left|switched|adopted|dropped|gave up|broke up|sold|bought|got|became|began|joined|"
    r"finished|graduated|retired|changed|lost|took up|went|married|divorced|returned|resumed|signed|accepted|"
    r"upgraded|replaced|cancell?ed|ended|passed|completed|launched|opened|closed|hired|promoted|transferred|"
    r"relocated|converted|learned|learnt|turned|decided|traded|picked up|stepped down|visited|travell?ed|flew|"
    r"attended|tried|built|received|earned|booked|enrolled|signed up|ran|applied|interviewed|"
    r"(?:favou?rite\s+\w+(?:\s+\w+)?|(?:(?:phone|mobile|cell)\s+)?number|e-?mail(?:\s+address)?|(?:home\s+)?address|"
    r"birthday|pronouns|(?:first\s+|last\s+|full\s+|nick)?name|job(?:\s+title)?|occupation|salary|time\s?zone|"
    r"goal|aim|plan|dream)"
    r"\s+(?:is|are))\b)|"
    rf"{_OWNERS_STATE.pattern}"
)
# Kin without "my" ("Sister goes by Jo", "Best friend Tom broke up") or the user's: read as "my ...". Not whom the
# owner deals with ("Landlord sent the renewal" is news of the owner's rent), nor a record ("Mum's BP: 128/82").
_OWNERS_RELATIVE = re.compile(
    rf"^(?:(?i:(?:the\s+)?user['’]s)\s+|(?=(?i:(?:best|older|younger|little|big)\s+)?(?i:{_KIN})\b(?!['’]s)))"
)
# An adverb between a thing or person and its verb: "the book club now meets".
_ADVERB = r"(?:now|still|also|just|usually|always|never|finally|recently|often)"
# A note's opening noun phrase before its verb: a capitalised word and lower-case ones ("Team meeting is"); a name
# is not followed by lower-case words ("Priya works", "Bruno the dog passed away" are people and pets).
_THING_FIRST = re.compile(
    r"^(?!(?:The|This|That|These|Those|A|An|My|Our)\b)"
    rf"([A-Z][a-z]+(?:\s+(?!(?:is|are|was|were|has|have|had|{_ADVERB})\b)[a-z][\w-]*){{1,3}})"
    rf"(?=\s+(?:{_ADVERB}\s+)?(?:is|are|was|were|has|have|had|moved|starts|started|changed|got|gets|will|costs?|"
    r"meets|opens|closes|runs|begins|ends)\b)"
)
# "my sister", "our dog", "my dog Rex" (then the name is the subject), "my best friend's"
_POSSESSED = re.compile(
    rf"^(?i:my|our)\s+(?:[\w-]+\s+)?((?i:{_RELATIVES}))(?:-in-law)?(?:'s)?\b(?:,?\s+([A-Z][\w'-]+))?"
)
# A capitalised word at the start is a name when what follows reads so: "'s", another capitalised word (Mei Lin,
# Grandpa Wojciech), or a verb of the third person ("Marco lives", "Tofu was"); "Switched to Neovim" is no name.
# "Kill drill 0: the key is ...", "Password manager: LastPass": a record's key, then its value. A key is a name,
# not a clause: "New number, save it: +233 ..." is a lead-in.
# A record's name ("Cabin wifi pw: ...", "Blood pressure at last check: ..."), not news told before a colon
# ("Allergy test came back: ...").
_HEADING = re.compile(
    r"^((?![Ii]\b|[Mm]y\b|[Oo]ur\b|[Ww]e\b)(?![^:\n,]*\b(?:came|went|got|is|are|was|were|has|had|did)\b)"
    r"[^:\n,]{2,40}?):\s"
)
# "her brother Ravi", "their dog Bolt": a named relative or pet of someone a pronoun stands for.
_THEIR_NAMED = re.compile(rf"^(?i:his|her|their)\s+(?:[\w-]+\s+)?(?i:{_RELATIVES})\b,?\s+([A-Z][\w'-]+)")
# After "my sister" or "Emre's manager": a name or ":" says who that is, an attribute of the owner.
_NAMES_THE_RELATIVE = re.compile(r"\s*(?::|\bis\b|\bwas\b|=)\s*(?:now\s+|still\s+)?(?:(?:Dr|Mr|Mrs|Ms)\.?\s+)?[A-Z]")
_LEADING_NAME = re.compile(
    r"^((?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,2})"
    r"(?=['’]s\b|\s+(?:is|was|has|had|does|did|doesn't|didn't|isn't|wasn't|can|can't|will|won't|would|got|gets|"
    r"just|also|still|now|finally|recently|never|always|left|got|took|went|made|began|became|bought|sold|quit|"
    r"came|gave|won|lost|met|ran|swam|told|said|[a-z]+s|[a-z]+ed)\b|\s*[,(]|\s+and\s+[A-Z])"
)
_NOT_NAMES = frozenset(
    "i the a an this that these those there here it its our my we he she they his her their what when where why "
    "how who which if after before since today yesterday tomorrow last next every each some all both our new you "
    "your yours honestly anyway everyone everybody nobody someone somebody people "
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday please let lets let's not never".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'@.+_-]*[a-z0-9]|[a-z0-9]")
_STOP = frozenset(
    "a an the and or but of to in on at for with from by as is are was were be been being am it its this that "
    "these those i me my mine we us our you your he him his she her they them their there here what which who "
    "whom whose when where why how so very just really too also not no yes do does did done have has had having "
    "will would can could should may might must shall about into over under again then than now up down out off "
    "get got gets getting go goes going went gone make made one ones some any all each every more most much many "
    "lot lots thing things stuff like love good great nice new old since still actually update been being i'm "
    "i've i'd i'll we're we've it's that's s t don't didn't can't won't isn't wasn't".split()
)
_VALUE_SLOT = re.compile(
    r"(?:\b(?:to|at|in|for|is|are|was|as|from|with|on|named|called|by|into|of)|['’]s)\s+((?:the\s+|a\s+|an\s+)?[\w@.+'-]+"
    r"(?:\s+[A-Z0-9][\w@.+'-]*){0,3})"
)
_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+|[A-Z]{2,})\b")
_DIGITS = re.compile(r"[\w@.+-]*\d[\w@.+:-]*")
_VOCATIVE = re.compile(
    r"(?:,\s*|\b(?i:hey|hi|hello|thanks|thank you|congrats|congratulations|wow|yeah|ha|oh|sorry|dear)\W+)"
    r"([A-Z][a-z][\w'-]*)(?=\s*(?:[!?.,]|$))"
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]*\w")


@dataclass(frozen=True)
class Said:
    """A memory as the rules read it: its text, who said it, and when."""

    memory_id: str
    text: str
    speaker: str | None
    when: float  # the memory's date (seconds since the epoch), else when it was added
    added: float  # when it was added: orders two memories of the same date


@dataclass(frozen=True)
class UpdateLink:
    """`older` is no longer current: `newer` states a new value of the same subject's attribute."""

    older: str
    newer: str
    confidence: float
    attribute: str
    subject: str
    cues: tuple[str, ...]
    evidence: str  # the newer memory's sentence that states the change


@dataclass(frozen=True)
class _Sentence:
    text: str
    subject: str | None
    attributes: frozenset[str]
    words: frozenset[str]
    values: frozenset[str]
    ending: tuple[str, ...]
    change: tuple[str, ...]
    news: tuple[str, ...]
    plan: bool
    wishes: tuple[str, ...]  # the words that make it a wish (negated or not: "I don't want to move" is no news)
    also: bool
    still: bool
    retold: bool
    past: bool
    question: bool
    attempt: tuple[str, ...] = ()  # what was tried, planned or begun: a story's step that has an outcome to come
    outcome: tuple[str, ...] = ()  # how a tried, planned or begun thing turned out
    # What was tried and what turned out: the content words (stemmed) right after each cue, up to a clause's end
    attempted: frozenset[str] = frozenset()
    turned_out: frozenset[str] = frozenset()
    strong: frozenset[str] = frozenset()  # the values that are names and numbers
    stopped: frozenset[str] = frozenset()  # what the subject does not do (its verbs): "doesn't eat gluten"
    doing: frozenset[str] = frozenset()  # what the subject is doing (its verbs): "he's eating bread again"
    liked: frozenset[str] = frozenset()  # what the subject likes (stemmed content words): "enjoys jazz music"
    disliked: frozenset[str] = frozenset()  # what the subject dislikes: "can't stand jazz anymore"
    abstains: frozenset[str] = frozenset()  # the foods the subject does not have: "is a vegetarian" (meat, fish, ...)
    eats: frozenset[str] = frozenset()  # the foods the subject has: "started eating fish again"
    refers: bool = False  # what it tried or aims at is named with a pronoun ("visiting them")
    states: bool = False  # it states a value ("X is Y", "X: Y", "Lives in Lyon") rather than tells an event
    next_values: frozenset[str] = frozenset()  # the next sentence's: "Caved and bought a car. A Renault Zoe."
    next_strong: frozenset[str] = frozenset()

    @property
    def wish(self) -> bool:
        return bool(self.wishes)

    # Read once a sentence: a turn's sentences are cached (`_read`) and compared with every candidate's.
    @cached_property
    def content_verbs(self) -> frozenset[str]:
        """Its content words of four letters or more (not cues) in any of their forms, as `_overlap` compares."""
        return frozenset(_verb(w) for w in self.words | self.values if len(w) >= 4 and w not in _CUE_WORDS)

    @cached_property
    def stopped_stems(self) -> frozenset[str]:
        return _stems(self.stopped)

    @cached_property
    def doing_stems(self) -> frozenset[str]:
        return _stems(self.doing)

    @property
    def cued(self) -> bool:
        return bool(self.ending or self.change or self.news)


# Below this the newer memory is not said to replace the older (chosen on the development set, decision 0043).
LINK_THRESHOLD = 0.55
# Below this cosine two memories are about different things unless they say the same but for the value ("Works as
# a barista at Blue Bottle", "Works as a software tester at Ubisoft": 0.14), or one has a food the other's diet
# leaves out: a cue alone ("moved", "lease ended") links what merely mentions the office.
FAR = 0.25
# Two subjects: the same (a name twice, one speaker), maybe the same (one side cannot be told), or not.
SAME, MAYBE, OTHER = "same", "maybe", "other"
# A sentence led by "he", "she", "it": someone not named here. One addressed to "you": never the speaker's news.
UNRESOLVED, ADDRESSEE = "?", "~you"


def find_updates(new: Said, older: Sequence[tuple[Said, float]]) -> list[UpdateLink]:
    """The links between `new` and each of `older` (with its embedding similarity to `new`) that the rules find.

    The later of the two (by date, then by when it was added) is the newer side whatever order they arrive in:
    a memory dated last year, added today, can be the one replaced.
    """
    links: list[tuple[Said, UpdateLink]] = []
    for other, similarity in older:
        if other.memory_id == new.memory_id:
            continue
        if (new.speaker or other.speaker) and not linkable_text(other):
            continue  # between a turn and another memory, only what `linkable_text` keeps can link: not read whole
        first, second = (other, new) if (other.when, other.added) <= (new.when, new.added) else (new, other)
        link = judge(first, second, similarity)
        if link is not None:
            links.append((first, link))
    if new.speaker is None:
        return [link for _, link in links]
    # A chat tells the same thing in many turns: a change there replaces the latest earlier statement of that
    # attribute, not every turn that ever touched it.
    latest: dict[tuple[str, str], tuple[Said, UpdateLink]] = {}
    for first, link in links:
        key = (link.newer, link.attribute)
        if key not in latest or (first.when, first.added) > (latest[key][0].when, latest[key][0].added):
            latest[key] = (first, link)
    return [link for _, link in latest.values()]


def linkable_text(memory: Said) -> str:
    """What of `memory` the rules could link either way, to look for the memories it may update or be updated by:
    a note's text; a chat turn's sentences that name an attribute or tell a step of a story, and the activities
    its other sentences say are (not) done ("" when none does: between two turns only those link, so its
    neighbours need not be read)."""
    return memory.text if memory.speaker is None else _linkable(memory.text, memory.speaker)


@lru_cache(maxsize=4096)  # asked again for a turn each time it is another add's candidate
def _linkable(text: str, speaker: str) -> str:
    lower = text.lower()
    if not (_COULD_LINK.search(lower) or _COULD_LINK.search(_QUOTED.sub(" ", lower))):
        return ""  # most turns (549 of LoCoMo's first 1,000): not read sentence by sentence, 0.5 to 0.9 ms a turn
    parts = []
    for s in _read(text, speaker):
        if s.attributes or s.attempt or s.outcome:
            parts.append(_OPENER.sub("", _GREETING.sub("", s.text)))
        else:  # "since we last chatted, I'm volunteering": the filler around an activity would find other turns
            parts.extend(sorted(s.stopped | s.doing))
    return " ".join(parts)


def terse_fact(memory: Said) -> bool:
    """Whether `memory` is a note written as memory tools write them, a fact of its owner's without a subject
    ("Works as a barista at Blue Bottle"): two values of one attribute so written are far apart in the embeddings."""
    return memory.speaker is None and _OWNERS_FACT.match(memory.text.lstrip()) is not None


def activities(memory: Said) -> str:
    """The activities a chat turn says its speaker is doing or not doing, as written ("" for a note: all its text
    is asked anyway)."""
    if memory.speaker is None:
        return ""
    return " ".join(sorted({v for s in _read(memory.text, memory.speaker) for v in s.stopped | s.doing}))


def judge(older: Said, newer: Said, similarity: float) -> UpdateLink | None:
    """The link from `older` to `newer`, when a sentence of `newer` replaces a value a sentence of `older` states."""
    new_sentences, old_sentences = _read(newer.text, newer.speaker), _read(older.text, older.speaker)
    new_default, old_default = (
        _memory_subject(new_sentences, newer.speaker),
        _memory_subject(old_sentences, older.speaker),
    )
    # Two speakers' turns: one's "I" is not the other's, so only a third person both name can link them.
    crossed = bool(older.speaker and newer.speaker and _name_key(older.speaker) != _name_key(newer.speaker))
    best: UpdateLink | None = None
    for new in new_sentences:
        replaces, tells = _may_replace(new), _may_tell_outcome(new)
        if not (replaces or tells):
            continue
        for old in old_sentences:
            if old.question or old.past or old.text.startswith("[shares"):
                continue  # a photo's caption shows a moment ("a certificate of a university degree"), no state
            old_subject, new_subject = old.subject or old_default, new.subject or new_default
            relation = related(old_subject, new_subject)
            if relation == OTHER or (UNRESOLVED in (old_subject, new_subject) and not new.cued):
                continue
            if crossed and relation != SAME:
                continue  # "her name is Shadow": whose, a pronoun does not say; only a stated change may link
            # "I had an interview for a design internship", then "I got accepted for a fashion internship"
            link = _outcome(older, newer, old, new, similarity, new_subject) if tells and relation == SAME else None
            if link is None and replaces and relation == SAME and (_turned(old, new) or _moved_on(old, new)):
                link = _preference(older, newer, old, new, similarity, new_subject)
            if link is None and replaces and not old.wish:  # "we should plan a session" was never a fact to replace
                link = _score(older, newer, old, new, similarity, relation, new_subject)
            if link is None and replaces and _flipped(old, new):
                # "he's eating bread again" in a note about Mateo: "he" is the one the note names
                named = (
                    related(old_subject, new_default) if new.subject == UNRESOLVED and not newer.speaker else relation
                )
                link = _activity(older, newer, old, new, similarity, new_default) if named == SAME else None
            if link is None and replaces and relation == SAME and (foods := _broken_diet(old, new)):
                link = _contradiction(older, newer, new, similarity, new_subject, "diet", foods)
            # Counts and denials between notes only: a chat counts weeks in every other turn ("it's been two weeks").
            note = not (older.speaker or newer.speaker)
            if link is None and note and replaces and relation == SAME and (counted := _recounted(old, new)):
                link = _contradiction(older, newer, new, similarity, new_subject, "count", counted)
            # A denial without a subject ("Allergy test came back negative, not allergic ...") denies the owner's
            # fact, not one of a document's findings.
            owners = relation == SAME or (relation == MAYBE and old_subject == "@self")
            if link is None and note and replaces and owners and (denied := _denied(old, new)):
                link = _contradiction(older, newer, new, similarity, new_subject, "denied", denied)
            if link is None and note and replaces and relation == SAME and (affirmed := _affirmed(old, new)):
                attribute = _pick(old.attributes) if old.attributes else "state"
                link = _contradiction(older, newer, new, similarity, new_subject, attribute, affirmed)
            if link is not None and (best is None or link.confidence > best.confidence):
                best = link
    return best


def _may_replace(new: _Sentence) -> bool:
    """Whether a sentence can state a change at all: not a question, a plan, the past told again, a second item."""
    lower = new.text.lower()
    if new.question or new.retold or new.wish:
        return False
    if new.plan and not _PLAN_OVERRIDE.search(lower):
        return False
    return not (new.also and not _ALSO_OVERRIDE.search(lower))


def _may_tell_outcome(new: _Sentence) -> bool:
    """Whether a sentence can tell how something turned out: not a question, a plan, the past told again, or a wish
    other than its outcome's own words ("I applied to three agencies" is the outcome of researching them)."""
    if not new.outcome or new.question or new.retold or (new.plan and not _PLAN_OVERRIDE.search(new.text.lower())):
        return False
    return all(any(wish in cue or cue in wish for cue in new.outcome) for wish in new.wishes)


def _score(
    older: Said, newer: Said, old: _Sentence, new: _Sentence, similarity: float, relation: str, subject: str | None
) -> UpdateLink | None:
    # An end counts when it is news ("quit" told again is not) and names what ended: an attribute both speak of,
    # or one of the older sentence's values ("no longer at Google").
    named = _overlap(old, new) or _short_name_shared(old, new)
    shared = frozenset(a for a in old.attributes & new.attributes if a != "schedule" or _rescheduled(old, new))
    functional = any(a.split(":")[0] in FUNCTIONAL for a in shared)
    # "Used to" ends a value the older states ("I live in Boston"), not an event it told.
    ending = tuple(
        c
        for c in new.ending
        if c not in old.ending
        and (named or (functional and c not in _NAMING_ENDS))
        and (c != "used to" or _states(old))
    )
    if new.change and not ending and _arrives_at(old, new):
        return None  # "Lived in Boston before moving to Denver" tells how "Lives in Denver" came to be
    chat = bool(older.speaker or newer.speaker)
    # Two notes of the subject's that say the same but for its value: "Favourite colour is teal", "... is orange".
    reframed = not chat and relation == SAME and _reframed(old, new)
    if similarity < FAR and not reframed:
        return None  # "we moved the office ... the lease ended" is no news of "Lunch is at the Thai place"
    # A sentence without values of its own ("Caved and bought a car.") may name it in the next ("A Renault Zoe").
    new_value = _brings(new.values, new.next_values, new, old) or reframed
    replaced = new_value and bool(old.values - new.words)  # it drops a value of the older and brings its own
    swapped = bool(new.strong - old.words) and bool(old.strong - new.words)  # names or numbers replaced
    strong_cue = bool(ending or new.change)
    if _two_of_a_kind(old.attributes, new.attributes):
        return None  # a work phone and a home phone, a favourite colour and a favourite flower
    if not new_value and not ending:
        return None  # the same value again, nothing ended: a restatement
    if new.still and not new.change and not (new.strong - old.words):
        return None  # "still $6.25": the value kept
    # A chat runs on for hundreds of turns that touch the same things ("new", "just", "now" in every other one):
    # between two turns, only a change of a named attribute links, and without a word of change only when close.
    if shared and functional:  # one value at a time: a new one replaces the old
        # Without a word of change, the older must state a value ("Gunnar drives a Volvo"), not tell an event
        # ("the wifi started timing out"): a later event with other numbers replaces nothing.
        # Between chat turns, only a new name or number counts as a new value: "now" and "new" are everywhere there.
        fresh = _brings(new.strong, new.next_strong, new, old) if chat else replaced
        stated = strong_cue or reframed or (((bool(new.news) and fresh) or swapped) and _states(old))
    elif shared:  # pets, hobbies, tools: a new one adds unless the sentence says the old one went
        # between chat turns, the older must say whose it is or state it ("I do all my coding in VS Code",
        # "Pottery's so relaxing"), not exclaim at the other's news ("Wow, a candlelit dance!")
        stated = (strong_cue and (not chat or old.subject is not None or _states(old))) or (
            reframed and bool(_CURRENT.search(new.text.lower()))  # "Mostly reads history books now"
        )
    else:  # no attribute names what they speak of: the words they share and a stated change must
        stated = (
            not chat
            and named
            # an older event ("ran out of disk space") is no value a later one replaces: it states one; "from
            # Notion to Obsidian" says which value gave way, however far apart the two are in the embeddings
            and (
                (strong_cue and (similarity >= 0.45 or _from_to(old, new)) and _states(old))
                # a record its name says is the same one ("Cabin wifi pw: ..." for "The wifi password at the
                # cabin is ...") needs no closeness to say its new value
                # and, with no word of change, only a value there is one of: "Timezone is CET", "Grandpa is 88";
                # "Speaks French", "Has a brother named Tom", "Has a meeting with Sales" may well have another
                or (
                    swapped
                    and (similarity >= 0.6 or _same_record(relation, subject))
                    and _states(old, new)
                    and (strong_cue or _ONE_VALUE.search(old.text) is not None)
                )
            )
        )
    if not stated:
        return None
    score = _closeness(similarity)
    score += 0.4 if ending else 0.0
    score += 0.3 if new.change else 0.15 if new.news else 0.0
    score += (0.25 if functional else 0.15) if shared else 0.0
    score += 0.15 if new_value else 0.0
    score += 0.1 if replaced else 0.0
    score -= 0.15 if new.still else 0.0
    score += 0.1 if relation == SAME else -0.1
    attribute = _pick(shared) if shared else "same topic"
    return _link(older, newer, new, score, attribute, subject, (*ending, *new.change, *new.news))


def _short_name_shared(old: _Sentence, new: _Sentence) -> bool:
    """Whether both sentences name one thing by a name of under four characters ("PS5", "BMW", "Kia"): `_overlap`
    counts only words of four letters or more, which leaves out such names."""
    return any(len(v) < 4 and not v.isdigit() and v not in _NOT_NAMES for v in old.strong & new.strong)


def _from_to(old: _Sentence, new: _Sentence) -> bool:
    """Whether `new` says a value of `old` gave way to another: "Moved all notes from Notion to Obsidian"."""
    for match in _FROM_TO.finditer(new.text.lower()):
        before, after = set(_WORD.findall(match.group(1))), set(_WORD.findall(match.group(2)))
        if before & old.values and after - old.words - _STOP:
            return True
    return False


def _arrives_at(old: _Sentence, new: _Sentence) -> bool:
    """Whether every move `new` tells ends where `old` already is: "moving to Denver" for "Lives in Denver", "Moved
    to Zalando from SAP" for "Works at Zalando"."""
    lower = new.text.lower()
    places = [_destination(lower, m.end()) for m in _MOVE_TO.finditer(lower)]
    old_values = {_stem(v) for v in old.values}
    return bool(places) and all(place and place <= old_values for place in places)


def _destination(lower: str, at: int) -> set[str]:
    """The words (stemmed) of where a move went: from `at` to the next word like "from", "in" or "for", at most
    four ("the Bay Area", "Denver")."""
    words: list[str] = []
    for word in _WORD.findall(_CLAUSE_END.split(lower[at:], maxsplit=1)[0])[:8]:
        if word in _STOP:
            if words:
                break
            continue
        words.append(_stem(word))
    return set(words[:4])


_FROM_TO = re.compile(r"\bfrom\s+((?:[\w@.+'-]+\s+){0,3}?[\w@.+'-]+)\s+to\s+([\w@.+'-]+)")
_MOVE_TO = re.compile(r"\b(?:moved|moving|move|relocated|relocating)\s+(?:back\s+)?to\b")


def _rescheduled(old: _Sentence, new: _Sentence) -> bool:
    """Whether `new` gives the thing `old` schedules a new time. A schedule holds many things: "Meets her mentor
    every other Friday" and "Meets her book club every other Friday" are two things at one time, "Has a standup at
    9:30" and "Has a dentist appointment at 9:30 on Monday" two things that share a time. So the times must differ,
    and the thing be named in both (a word besides times, numbers and cues: "standup", "bed", "book club"), or the
    newer say it changed and share a value ("Got put on nights, 7pm to 7am" for "My shift ... is 7am to 7pm")."""
    old_times, new_times = _TIME.findall(old.text.lower()), _TIME.findall(new.text.lower())
    if [_verb(t) for t in old_times] == [_verb(t) for t in new_times]:
        return False
    named_in_both = _scheduled_thing(old, old_times) & _scheduled_thing(new, new_times)
    return bool(named_in_both) or bool(new.change and old.values & new.values)


def _scheduled_thing(sentence: _Sentence, times: list[str]) -> frozenset[str]:
    """The words of a scheduling sentence but its times, numbers and cues, in any of their forms."""
    return frozenset(_verb(w) for w in sentence.words - _CUE_WORDS if not _DIGIT.search(w)) - {_verb(t) for t in times}


_DIGIT = re.compile(r"\d")
# The times of a schedule: days, clock times, parts of the day.
_TIME = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b\d{1,2}(?::\d\d)?\s*(?:am|pm)\b|\b\d{1,2}:\d\d\b|"
    r"\b(?:mornings?|afternoons?|evenings?|nights?|weekdays?|weekends?)\b"
)


def _reframed(old: _Sentence, new: _Sentence) -> bool:
    """Whether two statements differ only in a few words each, the value: "Is single", "Is engaged to Priya";
    "Prefers working mornings", "Prefers working evenings now"."""
    old_only, new_only = old.words - new.words - _CUE_WORDS, new.words - old.words - _CUE_WORDS
    if bool(_DENIAL.search(old.text.lower())) != bool(_DENIAL.search(new.text.lower())):
        return False  # "Is allergic to latex", "Is not allergic to pollen": one says what is not
    return 0 < len(old_only) <= 3 and 0 < len(new_only) <= 3 and _states(old) and _states(new)


def _same_record(relation: str, subject: str | None) -> bool:
    return relation == SAME and subject is not None and _KEYED.match(subject) is not None


def _closeness(similarity: float) -> float:
    """What the embeddings add to a link's confidence: nothing at cosine 0.3, 0.5 from 0.8."""
    return 0.5 * max(0.0, min(1.0, (similarity - 0.3) / 0.5))


def _link(
    older: Said, newer: Said, new: _Sentence, score: float, attribute: str, subject: str | None, cues: tuple[str, ...]
) -> UpdateLink | None:
    if score < LINK_THRESHOLD:
        return None
    return UpdateLink(
        older=older.memory_id,
        newer=newer.memory_id,
        confidence=round(min(score, 0.99), 3),
        attribute=attribute,
        subject=(subject or "?").lstrip("@"),
        cues=cues,
        evidence=new.text[:300],
    )


def _brings(values: frozenset[str], following: frozenset[str], new: _Sentence, old: _Sentence) -> bool:
    """Whether `new` brings a value `old` lacks: one of its `values`, or, when it has none of them and states a
    change, one of the next sentence's (`following`)."""
    return bool(values - old.words) or (not values and new.cued and bool(following - old.words))


def _outcome(
    older: Said, newer: Said, old: _Sentence, new: _Sentence, similarity: float, subject: str | None
) -> UpdateLink | None:
    """The link from a step of a story (`old`: an interview, an application, a plan, a book begun) to how it turned
    out (`new`: accepted, passed, finished, went), told by the same subject about the same thing."""
    if not old.attempt:
        return None
    outcome = tuple(
        c
        for c in new.outcome
        if c not in old.attempt
        and c not in old.outcome
        and (c not in _GOING or any(_AIMS.match(a) for a in old.attempt))
    )
    topic = old.attempted & new.turned_out
    if not outcome or not topic or similarity < OUTCOME_SIMILARITY:
        return None
    score = _closeness(similarity) + 0.3 + 0.1 * min(len(topic), 2)
    return _link(older, newer, new, score, "outcome", subject, outcome)


def _activity(
    older: Said, newer: Said, old: _Sentence, new: _Sentence, similarity: float, subject: str | None
) -> UpdateLink | None:
    """The link from a sentence saying the subject does not do something (`old`: "doesn't eat gluten", "haven't been
    able to volunteer lately") to one saying the subject is doing it (`new`), or the other way round."""
    if similarity < OUTCOME_SIMILARITY:
        return None
    verbs = _flipped(old, new)
    score = _closeness(similarity) + 0.35 + (0.1 if new.cued else 0.0)
    return _link(older, newer, new, score, "activity", subject, tuple(sorted(verbs)) + new.news + new.change)


def _preference(
    older: Said, newer: Said, old: _Sentence, new: _Sentence, similarity: float, subject: str | None
) -> UpdateLink | None:
    """The link from a sentence saying the subject likes something (`old`: "enjoys jazz music") to one saying the
    subject dislikes it (`new`: "can't stand jazz anymore"), or the other way round."""
    if similarity < OUTCOME_SIMILARITY:
        return None
    turned = sorted(_turned(old, new) | _moved_on(old, new))
    score = _closeness(similarity) + 0.35 + (0.1 if new.cued else 0.0)
    return _link(older, newer, new, score, "preference", subject, tuple(turned) + new.change)


def _contradiction(
    older: Said,
    newer: Said,
    new: _Sentence,
    similarity: float,
    subject: str | None,
    attribute: str,
    what: Iterable[str],
) -> UpdateLink | None:
    """The link where `new` says what cannot be true with the older sentence (`what`: the words that clash): linked
    however far apart their embeddings, surer with a cue."""
    score = _closeness(similarity) + LINK_THRESHOLD + (0.1 if new.cued else 0.0)
    return _link(older, newer, new, score, attribute, subject, tuple(sorted(what)) + new.news + new.change + new.ending)


def _recounted(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """What two sentences count differently, the newer stating its count: "Has two kids", then "Has three kids";
    "Adopted two cats in May", then "Has three cats"."""
    if not new.states:
        return frozenset()
    old_counts, new_counts = _counts(old.text.lower()), _counts(new.text.lower())
    return frozenset(w for w in old_counts.keys() & new_counts.keys() if old_counts[w] != new_counts[w])


def _counts(lower: str) -> dict[str, str]:
    """The numbers a sentence gives things: "has two kids" is {"kid": "2"}, each of the two words after a number."""
    counted: dict[str, str] = {}
    for match in _COUNT.finditer(lower):
        number = _NUMBER_WORDS.get(match.group(1), match.group(1))
        if match.group(1) in _TIMES:
            counted.setdefault("time", number)  # "twice a week" counts times
        for word in match.group(2).split():
            if len(word) >= 3 and word not in _STOP:
                counted.setdefault(_stem(word), number)
    return counted


def _denied(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """The words of what `old` states that `new` says is not so: "Is allergic to penicillin", then "not allergic to
    penicillin after all" (two of them, or the one it has)."""
    lower = old.text.lower()
    if _DENIAL.search(lower) or not _states(old):
        return frozenset()
    stated = {_stem(w) for w in old.words - _CUE_WORDS if len(w) >= 3}
    denied = {_stem(w) for m in _DENIAL.finditer(new.text.lower()) for w in _WORD.findall(m.group(1))} & stated
    return frozenset(denied) if stated and len(denied) >= min(2, len(stated)) else frozenset()


def _affirmed(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """The words of what `old` opens by saying its subject is not, has not or cannot, all of which `new` now says
    without a negation: "Can't swim", then "Learned to swim this summer"; "Not married", then "Married to Sam"."""
    denial = _OPENING_DENIAL.match(old.text.strip().lower())
    if denial is None or _ANY_NEGATION.search(new.text.lower()):
        return frozenset()
    denied = {w for w in _WORD.findall(denial.group(1)) if w not in _STOP and len(w) >= 3}
    said = {_verb(w) for w in new.words}
    return frozenset(denied) if denied and all(_verb(w) in said for w in denied) else frozenset()


# A note that opens by denying: "Not vegetarian", "Doesn't have a passport", "Can't cook"; what it denies follows.
_OPENING_DENIAL = re.compile(
    rf"(?:{_DENYING})\s+"
    r"(?:(?:have|has|got|a|an|any|be|been|ever)\s+)*(.+)"
)
_ANY_NEGATION = re.compile(r"\b(?:not|no|never|nobody|none|nothing)\b|n['’]t\b|\bcannot\b")


def _broken_diet(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """The foods one sentence says its subject does not have and the other that its subject has, either way: a diet
    ("is vegan") or a food given up, then the food had ("eats meat again"), however far apart their embeddings
    (cosine 0.28 for "Is a vegetarian", "Started eating fish again")."""
    return (old.abstains & new.eats) | (old.eats & new.abstains)


def _turned(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """What (stemmed) one sentence says its subject likes and the other that its subject dislikes, either way."""
    return (old.liked & new.disliked) | (old.disliked & new.liked)


def _moved_on(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """What the subject liked that a liking of the same kind now replaces: "Likes Italian food", then "Now prefers
    Japanese food" (another of the words liked, with a word of now)."""
    if not (old.liked & new.liked) or not _CURRENT.search(new.text.lower()):
        return frozenset()
    return old.liked - new.liked if new.liked - old.liked else frozenset()


def _liked(lower: str) -> frozenset[str]:
    """What a sentence says its subject likes, unless a negation or a wish ("would like to") comes before."""
    found: set[str] = set()
    for match in _LIKES.finditer(lower):
        wished = lower[max(0, match.start() - 6) : match.start()].endswith(("would ", "'d "))
        if not (wished or _negated(lower, match.start())):
            found |= _words_after(lower, match.end(), shortest=3)
    for match in _PREFERRED.finditer(lower):  # "now prefers Japanese food": what is preferred, not to what
        if not _negated(lower, match.start()):
            found |= _content_stems(_CONNECTOR.split(_CLAUSE_END.split(lower[match.end() :], maxsplit=1)[0])[0], 3)
    return frozenset(found)


def _disliked(lower: str) -> frozenset[str]:
    """What a sentence says its subject dislikes, or likes less than something else."""
    found = {w for match in _DISLIKES.finditer(lower) for w in _words_after(lower, match.end(), shortest=3)}
    return frozenset(found | _less_preferred(lower))


def _less_preferred(lower: str) -> set[str]:
    """What a sentence says its subject likes less than something else: "prefers tea over coffee" is {coffee} (what
    is preferred, `_liked` reads)."""
    found: set[str] = set()
    for match in _PREFERS.finditer(lower):
        preferred, connector, less = match.groups()
        if not ((connector == "to" and preferred.endswith("ing")) or _negated(lower, match.start())):
            found |= _content_stems(less, 3)
    return found


def _abstains(lower: str) -> frozenset[str]:
    """The foods and drinks a sentence says its subject does not have: a diet's ("is vegan"), or named ("doesn't
    eat meat")."""
    found: set[str] = set()
    for match in _DIET.finditer(lower):
        if not _negated(lower, match.start()):  # "no longer vegetarian"
            found |= _DIETS[match.group(0)]
    for match in _NOT_EATING.finditer(lower):
        found |= _foods_after(lower, match.end())
    return frozenset(found)


def _eats(lower: str) -> frozenset[str]:
    """The foods and drinks a sentence says its subject has: "started eating fish again"."""
    eaten = (_foods_after(lower, m.end()) for m in _EATING.finditer(lower) if not _negated(lower, m.start()))
    return frozenset().union(*eaten)


def _foods_after(lower: str, at: int) -> set[str]:
    words = (w.removesuffix("s") for w in _WORD.findall(_CLAUSE_END.split(lower[at:], maxsplit=1)[0])[:6])
    return {w for w in words if w in _FOODS}


def _content_stems(text: str, shortest: int) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text) if len(w) >= shortest and w not in _STOP | _CUE_WORDS | _PLAIN}


def _objects(cues: re.Pattern[str], lower: str) -> frozenset[str]:
    """The content words (stemmed) of what each cue is about: the words after it, up to a clause's end, at most
    six. "applied to adoption agencies" is about {adoption, agency}."""
    return frozenset(w for match in cues.finditer(lower) for w in _words_after(lower, match.end(), shortest=4))


def _words_after(lower: str, at: int, *, shortest: int) -> set[str]:
    """The content words (stemmed) from `at` to the clause's end, at most six, none shorter than `shortest`."""
    clause = _CLAUSE_END.split(lower[at:], maxsplit=1)[0]
    return _content_stems(" ".join(_WORD.findall(clause)[:6]), shortest)


def _refers(lower: str) -> bool:
    """Whether what a sentence tries or aims at is named with a pronoun: "I dream of visiting them one day"."""
    return any(
        _REFERS.search(_CLAUSE_END.split(lower[match.end() :], maxsplit=1)[0]) for match in _ATTEMPT.finditer(lower)
    )


def _activities(pattern: re.Pattern[str], lower: str) -> frozenset[str]:
    """The verbs `pattern` finds done or not done, as written, less those that name no activity."""
    verbs = (m.group(1) or m.group(2) for m in pattern.finditer(lower) if not _negated(lower, m.start()))
    return frozenset(v for v in verbs if len(_verb(v)) >= 3 and _verb(v) not in _NOT_ACTIVITIES)


def _flipped(old: _Sentence, new: _Sentence) -> frozenset[str]:
    """The activities (stemmed) one sentence says its subject does not do and the other says its subject is doing,
    the older first or the newer. The not doing must be a state: "I haven't had time to read, but I finally picked
    up a book" tells its own news."""
    resumed = frozenset() if old.news or old.change else old.stopped_stems & new.doing_stems
    ended = frozenset() if new.news or new.change else old.doing_stems & new.stopped_stems
    return resumed | ended


def _stems(verbs: frozenset[str]) -> frozenset[str]:
    return frozenset(_verb(v) for v in verbs)


_ES_AFTER = ("ses", "xes", "zes", "ches", "shes")


def _verb(word: str) -> str:
    """A verb's stem, the same for "eat", "eats", "eating"; "volunteer", "volunteering"; "run", "running"."""
    for suffix in ("ing", "ed", "es", "s"):
        if suffix == "es" and not word.endswith(_ES_AFTER):
            continue  # "teaches", "boxes"; "coffees" is "coffee" and an "s"
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # "running", "stopped"
            break
    return word.removesuffix("e")  # "make", "making"


_NOT_ACTIVITIES = frozenset(_verb(word) for word in _DOING_NOTHING)


_CLAUSE_END = re.compile(r"[,.;:!?()\[\]—–]|\s-\s|\b(?:and|but|while|since|because|so|though|which|who|when)\b")


def _stem(word: str) -> str:
    """A crude English stem, enough to match "agencies" with "agency" and "castles" with "castle"."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("es", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)] + repl
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word  # "castle" as "castl(es)"


def _overlap(old: _Sentence, new: _Sentence) -> bool:
    """Whether two sentences share a content word of four letters or more (not a cue), in any of its forms: "runs"
    and "running"."""
    return not old.content_verbs.isdisjoint(new.content_verbs)


def _two_of_a_kind(old: frozenset[str], new: frozenset[str]) -> bool:
    """Whether the two sentences name one kind of attribute with different qualifiers (and not the same one)."""
    qualified = {a.split(":")[0]: a for a in old if ":" in a}
    return any(":" in a and a.split(":")[0] in qualified and qualified[a.split(":")[0]] != a for a in new)


def _states(*sentences: _Sentence) -> bool:
    """Whether any of the sentences states a value."""
    return any(s.states for s in sentences)


def _owners_fact_lowered(text: str, subject: str | None) -> str:
    """A sentence's text, its first letter lowered where it is a note's fact about its owner ("Lives in Lyon",
    "Is single"): capitals elsewhere stay ("Study 4" in a title states nothing)."""
    if subject == "@self" and _OWNERS_FACT.match(text):
        return text[:1].lower() + text[1:]
    return text


# A statement of the one value a thing has: "X is Y", "X: Y", "X = Y".
_IS = r":\s|['’](?:s|re|m)\s|\b(?:is|are|am)\b"
_ONE_VALUE = re.compile(rf"{_IS}|=", re.IGNORECASE)
_STATE = re.compile(
    rf"{_IS}|\b(?:costs?|equals|lives?|works?|drives?|uses?|plays?|stud(?:y|ies)|has|have|"
    r"owns?|rents?|prefers?|loves?|likes?|eats?|teach(?:es)?|coach(?:es)?|goes|weighs?|reports? to|leads?|manages?|"
    r"belongs?|doesn't|don't|isn't|aren't|(?:reach|calls?|text) (?:me|us|him|her|them))\b"
)


def _pick(shared: frozenset[str]) -> str:
    """The attribute a link names when two sentences share several: a functional one first, in table order."""
    ordered = sorted(shared, key=lambda a: (a.split(":")[0] not in FUNCTIONAL, list(ATTRIBUTES).index(a.split(":")[0])))
    return ordered[0]


@lru_cache(maxsize=4096)  # asked for every pair of sentences compared, of a few subjects: half the rules' time
def related(a: str | None, b: str | None) -> str:
    """Whether two subjects are the same: `@name` a speaker (or `@self`), `@name:sister` the speaker's relative or
    pet, a bare name a person or pet named in the text (its first words), None unknown."""
    if ADDRESSEE in (a, b):
        return OTHER
    if a is None or b is None:
        return MAYBE
    if UNRESOLVED in (a, b):  # "she had to find a new place" is not the speaker's news
        return OTHER if a.startswith("@") or b.startswith("@") else MAYBE
    if a == b:
        return SAME
    (a, a_of), (b, b_of) = a.partition("<")[::2], b.partition("<")[::2]
    if (a_of and a_of == b) or (b_of and b_of == a):
        return OTHER  # the speaker and the speaker's sister
    if _KEYED.match(a) or _KEYED.match(b):
        return _related_things(a, b)
    a_speaker, b_speaker = a.startswith("@"), b.startswith("@")
    if a_speaker and b_speaker:
        return OTHER  # two speakers, or a speaker and their relative, or two relatives
    if a_speaker or b_speaker:
        speaker, name = (a, b) if a_speaker else (b, a)
        if ":" in speaker:
            return MAYBE  # "my sister" and "Kasia" may be one person
        return SAME if speaker[1:] == name.split()[0] else MAYBE
    short, long = sorted((a.split(), b.split()), key=len)
    return SAME if long[: len(short)] == short else OTHER


def _related_things(a: str, b: str) -> str:
    """Two things named by their words ("the billing service", "Kill drill 0:"): other when their numbers differ
    (drill 0 and drill 1 are two records), the same when the words of one are all words of the other."""
    words_a, words_b = (_thing_words(x) for x in (a, b))
    if (_owners(a) - words_b) or (_owners(b) - words_a):
        return OTHER  # "Mum's blood pressure" is not the speaker's "Blood pressure"
    numbers_a, numbers_b = ({w for w in words if any(c.isdigit() for c in w)} for words in (words_a, words_b))
    if numbers_a and numbers_b and numbers_a != numbers_b:
        return OTHER
    if words_a and words_b and (words_a <= words_b or words_b <= words_a):
        return SAME  # "Kyoto hotel", "hotel in Kyoto"; "Emre", "Emre's manager"; not "billing service", "flag service"
    both_things = _KEYED.match(a) and _KEYED.match(b)
    return OTHER if both_things else MAYBE if a.startswith("@") or b.startswith("@") else OTHER


# A thing named by the words before a colon ("Kill drill 0: ...") or after an article ("the billing service").
_KEYED = re.compile(r"^(?:key:|the )")
# A record's name in short ("Cabin wifi pw", "BP at today's checkup"), and the words that say when it was read,
# not which record it is ("at last check", "today's").
_SHORT_FOR = {"pw": "password", "pwd": "password", "passwd": "password", "bp": "blood pressure", "tel": "phone"}
_OCCASION = frozenset("today yesterday last latest current recent check checkup check-up reading".split())


def _owners(thing: str) -> frozenset[str]:
    """Whose a record is, where its name says it ("Mum's blood pressure"): not when it was read ("today's")."""
    words = _WORD.findall(_KEYED.sub("", thing.replace("’", "'")))
    return frozenset(w[:-2] for w in words if w.endswith("'s")) - _OCCASION


def _thing_words(thing: str) -> frozenset[str]:
    words = (w.removesuffix("'s").removesuffix("’s") for w in _WORD.findall(_KEYED.sub("", thing)))
    return frozenset(part for w in words for part in _SHORT_FOR.get(w, w).split()) - _STOP - _OCCASION


def _memory_subject(sentences: Sequence[_Sentence], speaker: str | None) -> str | None:
    """Who a memory is about where a sentence does not say: a chat turn's speaker ("Switched to Neovim" is the
    speaker's news), else the first subject one of its sentences names."""
    if speaker:  # a chat turn: what it says without naming someone is its speaker's news
        return "@" + _name_key(speaker)
    return next((s.subject for s in sentences if s.subject not in (None, UNRESOLVED, ADDRESSEE)), None)


@lru_cache(maxsize=4096)
def _read(text: str, speaker: str | None) -> list[_Sentence]:
    sentences = _resolved([_sentence(piece, speaker) for piece in _split(text)])
    return [
        replace(s, next_values=after.values, next_strong=after.strong) for s, after in pairwise(sentences)
    ] + sentences[-1:]


def _resolved(sentences: list[_Sentence]) -> list[_Sentence]:
    """The sentences, each whose aim is named with a pronoun about the content words of those before it too."""
    earlier: frozenset[str] = frozenset()
    read = []
    for sentence in sentences:
        read.append(replace(sentence, attempted=sentence.attempted | earlier) if sentence.refers else sentence)
        if not _GREETING.fullmatch(sentence.text):  # "Hey John!" names whom the turn speaks to, no aim
            earlier |= {_stem(w) for w in sentence.words if len(w) >= 4 and w not in _CUE_WORDS | _PLAIN}
    return read


def _split(text: str) -> list[str]:
    pieces: list[str] = []
    for piece in _SENTENCE_END.split(text[:4000]):
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"  # "Dr. Varga" is one sentence
        else:
            pieces.append(piece)
    read = [_BULLET.sub("", reading) for piece in pieces for reading in (piece, *_SO.split(piece)[1:])]
    return [p.strip() for p in read if len(p.strip()) >= 3][:40]


# A list's marker ("- Lives in Oslo", "2) Works at Equinor"): each item is a sentence of its own.
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")


_ABBREVIATION = re.compile(r"(?:^|\s)(?:Dr|Mr|Mrs|Ms|Prof|St|vs|etc|e\.g|i\.e|approx|no|Jr|Sr)\.$", re.IGNORECASE)


def _sentence(text: str, speaker: str | None) -> _Sentence:
    lower = text.lower()
    subject = subject_of(text, speaker)
    words = frozenset(_WORD.findall(lower)) - _STOP
    lowered = _owners_fact_lowered(text, subject)
    values, strong = _values(lowered, subject)
    return _Sentence(
        text=text,
        subject=subject,
        # What the subject is called says nothing of what is said of it: "the office wifi" is no office.
        # Nor does a title: "The Name of the Wind" is no one's name.
        attributes=_attributes(
            _QUOTED.sub(" ", lower.replace(subject, " ", 1) if subject and subject.startswith("the ") else lower)
        ),
        words=words,
        values=values,
        strong=strong,
        ending=_found(_ENDING, lower),
        change=_found(_CHANGE, lower) + (("actually",) if _ACTUALLY.match(lower) else ()),
        news=_found(_NEWS, lower),
        plan=bool(_PLAN.search(lower)),
        wishes=tuple(m.group(0) for m in _WISH.finditer(lower)),
        also=bool(_ALSO.search(lower)),
        still=bool(_STILL.search(lower)),
        retold=bool(_RETOLD.search(lower)),
        past=bool(_OLD_PAST.search(lower)),
        question=text.rstrip().endswith("?"),
        attempt=_found(_ATTEMPT, lower),
        outcome=_found(_OUTCOME, lower) + (() if speaker else _found(_NOTE_OUTCOME, lower)),
        attempted=_objects(_ATTEMPT, lower),
        turned_out=_objects(_OUTCOME, lower) | (frozenset() if speaker else _objects(_NOTE_OUTCOME, lower)),
        stopped=_activities(_NOT_DOING, lower),
        doing=_activities(_DOING, lower),
        liked=_liked(lower),
        disliked=_disliked(lower),
        abstains=_abstains(lower),
        eats=_eats(lower),
        refers=_refers(lower),
        states=bool(
            _STATE.search(lowered)
            or (subject == "@self" and (_PRESENT.match(text) or _OWNERS_STATE.match(text)))
            or _thing_states(lower, subject)
        ),
    )


def _thing_states(lower: str, subject: str | None) -> bool:
    """Whether a thing's verb of the present follows its name, before what it is of: "The book club (now) meets on
    ..." states a value as "is" does."""
    if subject is None or not subject.startswith("the "):
        return False
    name = subject.removeprefix("the ")  # "Book club meets on ...": a note names a thing without its article
    at = lower.find(name)
    return at >= 0 and _THING_VERB.match(lower, at + len(name)) is not None


_QUOTED = re.compile(r"[\"“”][^\"“”]{1,80}[\"“”]")
# Where none of these is found in a text, none of its sentences names an attribute, tells a step of a story or
# says an activity is (not) done.
_COULD_LINK = re.compile(
    f"{_ANY_ATTRIBUTE.pattern}|(?:{_ATTEMPT.pattern})|(?:{_OUTCOME.pattern})|"
    f"(?:{_NOT_DOING.pattern})|(?:{_DOING.pattern})"
)


def _attributes(lower: str) -> frozenset[str]:
    """The attributes a sentence speaks of, each narrowed by its qualifier where it has one: a favourite *colour*
    and a favourite *flower*, a *work* phone and a *home* phone are different things."""
    if not _ANY_ATTRIBUTE.search(lower):  # most sentences: one search instead of one per attribute
        return frozenset()
    found = set()
    for name, pattern in ATTRIBUTES.items():
        masked = _NOT_THE_ATTRIBUTE.get(name)
        match = pattern.search(masked.sub(" ", lower) if masked else lower)
        if match is None:
            continue
        qualifier = _QUALIFIER.get(name)
        narrowed = qualifier.search(lower) if qualifier else None
        found.add(f"{name}:{next(g for g in narrowed.groups() if g)}" if narrowed else name)
    return frozenset(found)


# Words that name another thing's attribute: "a dog named Bruno" is the dog's name, not its owner's.
_NOT_THE_ATTRIBUTE = {
    "name": re.compile(r"\b(?:a|an|the|two|three|\d+)\s+(?:[\w-]+\s+){1,2}(?:named|called)\s+\S+"),
    # what one does "while driving" says nothing of the car
    "vehicle": re.compile(r"\b(?:while|when)\s+driving\b"),
    # a team one works with is not the one one is on: "Works closely with the fraud team"
    "team": re.compile(
        r"\b(?:work(?:s|ed|ing)?|collaborat\w+|partner(?:s|ed|ing)?)\s+(?:closely\s+)?with\s+"
        r"(?:the\s+|our\s+|their\s+|a\s+)?(?:[\w-]+\s+){0,2}team\b"
    ),
}
# A part of a thing is not the thing: "Upgraded the phone's storage" or "Replaced the car's tyres" changes no phone
# or car ("Uses a Pixel 6 as their phone", "Drives a Honda Civic"): the part qualifies the attribute, as "work" does a
# phone, so two values of one part are one attribute (`vehicle:tyres`) and neither is the thing's.
_PART = (
    r"(?:'s|’s)?\s+(storage|battery|batteries|screen|case|charger|cover|memory|ram|ssd|hard drive|keyboard|trackpad|"
    r"wallpaper|ringtone|camera|tyres?|tires?|wheels?|brakes?|engine|oil|seats?|paint(?:work)?|windscreen|windshield|"
    r"exhaust|clutch|headlights?|wipers?)\b"
)
_QUALIFIER = {
    "favourite": re.compile(r"\bfavou?rite\s+([a-z]+)"),
    "phone": re.compile(
        rf"\b(work|home|office|personal|private|business|landline|mobile)\s+(?:phone|number|line)|\bphone{_PART}"
    ),
    "email": re.compile(r"\b(work|home|personal|private|business|school)\s+e-?mail"),
    "tool": re.compile(rf"\b(?:phone|laptop|computer|pc|mac|macbook|tablet|ipad){_PART}"),
    "vehicle": re.compile(rf"\b(?:car|van|truck|bike|motorbike|motorcycle|scooter){_PART}"),
}


def _found(pattern: re.Pattern[str], lower: str) -> tuple[str, ...]:
    """The cues `pattern` finds, less the negated ones: "I won't quit" ends nothing."""
    return tuple(dict.fromkeys(m.group(0) for m in pattern.finditer(lower) if not _negated(lower, m.start())))


def _negated(lower: str, at: int) -> bool:
    """Whether a negation (and at most one word) comes right before `at`: looked for in the 40 characters before it,
    not from the start of the sentence (a search from the start cost a tenth of reading a sentence)."""
    return _NEGATED.search(lower, max(0, at - 40), at) is not None


_NEGATED = re.compile(
    r"\b(?:not|never|won't|wont|don't|dont|didn't|can't|cannot|wouldn't|isn't|wasn't|haven't|hasn't|no)\s+"
    r"(?:\w+\s+)?$"
)


def subject_of(sentence: str, speaker: str | None) -> str | None:
    """Who or what `sentence` is about: `@speaker` for the first person (`@self`, the workspace's owner, without
    a speaker), the speaker's relative or pet (`@self:sister`), a person or pet named at its start (`marco`,
    `mei lin`, `lucía:husband` for "Lucía's husband"), or None when it cannot be told."""
    me = "@" + (_name_key(speaker) if speaker else "self")
    rest = _GREETING.sub("", sentence.strip())
    rest = _WHEN_FIRST.sub("", _LEADERS.sub("", rest).lstrip(" \"'“("))
    if speaker:  # "John, that's a great idea!": in a chat, a leading name and a comma call the other person
        rest = re.sub(r"^[A-Z][\w'-]*,\s+", "", rest)
    if not speaker:  # a note's "User's sister", "Sister": its owner's
        rest = _OWNERS_RELATIVE.sub("my ", rest, count=1)
    heading = _HEADING.match(rest)
    if heading is not None and _name_key(heading.group(1)) != me[1:]:  # "Caroline: I moved" is a speaker's lead
        return "key:" + " ".join(heading.group(1).lower().split())
    possessed = _POSSESSED.match(rest)
    if possessed is not None:
        name = possessed.group(2)
        if name and name.lower() not in _NOT_NAMES:
            return f"{_name_key(name)}<{me}"  # "my sister Sigrid": Sigrid, who is not the speaker
        if _NAMES_THE_RELATIVE.match(rest[possessed.end(1) :]):
            return me  # "my dentist is Dr. Okafor": who the dentist is, is the speaker's attribute
        return f"{me}:{possessed.group(1).lower()}"
    lower = rest.lower()
    if re.match(r"(?:i|i'm|i've|i'd|i'll|im|me|my|mine|we|we're|we've|we'd|we'll|us|our)\b", lower):
        return me
    theirs = _THEIR_NAMED.match(rest)
    if theirs is not None:  # "her brother Ravi moved": Ravi, whoever "her" is
        return _name_key(theirs.group(1))
    if _THIRD_PERSON.match(rest):
        return UNRESOLVED
    if _SECOND_PERSON.search(lower) and not _FIRST_PERSON.search(lower):
        return ADDRESSEE
    if not speaker and _OWNERS_FACT.match(rest):
        return me
    thing = _THING_FIRST.match(rest) if not speaker else None
    if thing is not None:  # "Team meeting is ...", "Gym class is ...": two things, neither a person
        return "the " + thing.group(1).lower()
    rest = re.sub(r"^[Tt]he\s+(?=[A-Z])", "", rest)  # "The Fairhaven Clinic is ..."
    named = _LEADING_NAME.match(rest)
    first = named.group(1).split()[0].lower() if named is not None else ""
    if named is not None and first not in _NOT_NAMES and not _ly_adverb(first):
        key = _name_key(named.group(1))
        relative = re.match(rf"['’]s\s+({_RELATIVES})\b", rest[named.end(1) :], re.IGNORECASE)
        if relative is None or _NAMES_THE_RELATIVE.match(rest[named.end(1) + relative.end(1) :]):
            return key
        return f"{key}:{relative.group(1).lower()}"
    article = _ARTICLE_NOUNS.match(lower)
    if article is not None:  # "the billing service" and "the data warehouse" are two things, "the office" one
        return "the " + article.group(1)
    if _FIRST_PERSON.search(lower):
        return me
    return None


def _ly_adverb(word: str) -> bool:
    """Whether a sentence's first word that ends in "ly" is an adverb ("Finally", "Recently", "Sadly") and not a name
    ("Emily", "Holly", "Kimberly"): by the endings English makes its adverbs with, and a few common ones made
    otherwise. Read as adverbs, names like these left a note without a subject, so "Emily lives in York" could be
    replaced by "Sam moved to Leeds"."""
    if not word.endswith("ly"):
        return False
    if word in _PLAIN_ADVERBS:
        return True
    short_name = len(word) < 6 and word.endswith(("ally", "ily"))  # "Sally", "Emily", "Lily"; not "easily"
    return _ADVERB_ENDING.search(word) is not None and not short_name


_ADVERB_ENDING = re.compile(
    r"(?:ally|fully|ously|ively|ently|antly|ably|ibly|ately|ingly|edly|ely|tly|dly|ghly|nly|ply|wly|uly|kly|hly|ily|"
    r"sly|yly)$"
)
_PLAIN_ADVERBS = frozenset(
    "daily early nearly clearly fairly poorly regularly particularly similarly properly formerly utterly yearly "
    "hourly quarterly".split()
)


@lru_cache(maxsize=1024)
def _name_key(name: str) -> str:
    words = [w.lower().removesuffix("'s").removesuffix("’s") for w in name.strip().split()]
    return " ".join(w for w in words if w not in _TITLES) or words[0]


_IRREGULAR = "ran|went|lost|took|made|left|came|gave|won|met|sold|bought|quit|began|became|grew|fell|broke|hit|kept"
# "the nightly backup job ran ...": the words after the article up to the verb (one to six of them), an adverb
# before the verb left out ("the book club now meets": the book club).
_ARTICLE_NOUNS = re.compile(
    r"(?:the|this|that)\s+((?:(?!is\b|are\b|was\b|were\b|has\b|had\b|got\b|gets\b|will\b|can\b)"
    rf"(?!{_ADVERB}\b)[a-z0-9][\w'-]*(?<!ed)\s*){{1,6}}?)"
    rf"(?=\s+(?:{_ADVERB}\s+)?(?:is|are|was|were|has|had|got|gets|will|can|{_IRREGULAR}|[a-z]+ed|[a-z]+s)\b)"
)
# A thing's verb of the present, right after its name and before what it is of ("the book club meets on ...");
# not a plural noun of the name ("the CI runners was ...", "the Kubernetes ingress ran ...").
_THING_VERB = re.compile(
    rf"\s+(?:{_ADVERB}\s+)?[a-z]{{2,}}(?<!a)s\s+(?:on|in|at|to|from|with|every|each|the|a|an|its|their|our|\d)\b"
)
_TITLES = frozenset("dr dr. mr mr. mrs mrs. ms ms. prof prof. the".split())


_TITLE_STOP = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St)\.(?=\s+[A-Z])")


def _values(text: str, subject: str | None) -> tuple[frozenset[str], frozenset[str]]:
    """The words that could fill an attribute (names, numbers, and what follows "to", "at", "in", "is"), and the
    strong ones among them (names and numbers)."""
    called = {m.group(1) for m in _VOCATIVE.finditer(text)}  # "Thanks, Jon!": whom a turn speaks to is no value
    titled = _TITLE_STOP.sub(r"\1", text)  # "the kids see Dr. Osei now": Osei is a name, not a sentence's first word
    strong = [m.group(1).lower() for m in _CAPITAL.finditer(titled) if m.group(1) not in called]
    strong += (m.group(0).lower().strip(".") for m in _DIGITS.finditer(text))
    strong += (m.group(0).lower() for m in _EMAIL.finditer(text))
    slots = [w for match in _VALUE_SLOT.finditer(text) for w in _WORD.findall(match.group(1).lower())]
    owner = set((subject or "").replace("@", " ").replace(":", " ").replace("<", " ").split())

    def kept(found: list[str]) -> frozenset[str]:
        words = (w for w in found if w not in _STOP and w not in owner and (len(w) > 1 or w.isdigit()))
        return frozenset(w.removesuffix("'s") for w in words) - _CUE_WORDS

    return kept(strong + slots), kept(strong)


_CUE_WORDS = frozenset(
    "now actually moved moving changed instead switched update updated correction currently new started just "
    "recently since finally longer anymore quit left lost sold retired former formerly".split()
)
