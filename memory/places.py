"""Places a person may say they work in, by their English names: cities, states and provinces, countries.

"I work in Seattle" names a city; "I work in Oncology", "in Payroll", "in Oil and Gas" a field or a department,
and both are capitalised. A list of places tells them apart without a model; a place not on it is not kept (a
fact missed, never a department kept as a city). Lower case, names of up to three words.
"""

from __future__ import annotations

import re

_CITIES = """
new york|nyc|new york city|brooklyn|manhattan|queens|the bronx|los angeles|la|san francisco|sf|san jose|oakland
|berkeley|palo alto|mountain view|sunnyvale|santa clara|cupertino|menlo park|redwood city|san diego|sacramento
|fresno|irvine|long beach|pasadena|santa monica|seattle|bellevue|redmond|tacoma|spokane|portland|boise|salt lake city
|las vegas|reno|phoenix|tucson|scottsdale|tempe|denver|boulder|colorado springs|albuquerque|santa fe|el paso|austin
|dallas|houston|san antonio|fort worth|plano|chicago|evanston|milwaukee|madison|minneapolis|st paul|st. paul|detroit
|ann arbor|grand rapids|cleveland|columbus|cincinnati|pittsburgh|philadelphia|philly|harrisburg|baltimore
|washington|dc|washington dc|arlington|alexandria|richmond|norfolk|raleigh|durham|chapel hill|charlotte|atlanta
|savannah|miami|orlando|tampa|jacksonville|fort lauderdale|tallahassee|nashville|memphis|knoxville|louisville
|lexington|indianapolis|st louis|st. louis|kansas city|omaha|des moines|oklahoma city|tulsa|little rock
|new orleans|baton rouge|birmingham|boston|cambridge|somerville|worcester|providence|hartford|new haven|stamford
|newark|jersey city|hoboken|princeton|buffalo|rochester|albany|syracuse|ithaca|anchorage|honolulu|toronto|montreal
|vancouver|calgary|edmonton|ottawa|winnipeg|quebec city|halifax|victoria|mexico city|guadalajara|monterrey
|cancun|havana|bogota|medellin|lima|quito|santiago|buenos aires|sao paulo|rio|rio de janeiro|montevideo|caracas
|london|manchester|liverpool|leeds|bristol|oxford|glasgow|edinburgh|cardiff|belfast|dublin|cork|paris|lyon
|marseille|nice|toulouse|bordeaux|berlin|munich|hamburg|frankfurt|cologne|stuttgart|dusseldorf|leipzig|dresden
|vienna|zurich|geneva|basel|bern|amsterdam|rotterdam|the hague|utrecht|eindhoven|brussels|antwerp|luxembourg
|copenhagen|stockholm|gothenburg|oslo|bergen|helsinki|reykjavik|madrid|barcelona|valencia|seville|malaga|bilbao
|lisbon|porto|rome|milan|naples|turin|florence|venice|bologna|athens|thessaloniki|istanbul|ankara|izmir|warsaw
|krakow|prague|brno|budapest|bucharest|sofia|belgrade|zagreb|ljubljana|bratislava|vilnius|riga|tallinn|kyiv|kiev
|lviv|moscow|st petersburg|saint petersburg|minsk|tbilisi|yerevan|baku|tel aviv|jerusalem|haifa|beirut|amman
|cairo|alexandria|casablanca|marrakech|tunis|algiers|lagos|abuja|accra|nairobi|mombasa|addis ababa|kampala|kigali
|dar es salaam|johannesburg|cape town|durban|pretoria|dubai|abu dhabi|doha|riyadh|jeddah|kuwait city|muscat
|manama|tehran|karachi|lahore|islamabad|delhi|new delhi|mumbai|bombay|bangalore|bengaluru|hyderabad|chennai
|kolkata|pune|ahmedabad|jaipur|kochi|gurgaon|gurugram|noida|dhaka|kathmandu|colombo|beijing|shanghai|shenzhen
|guangzhou|hangzhou|chengdu|chongqing|wuhan|xian|xi'an|nanjing|suzhou|tianjin|qingdao|xiamen|dalian|shenyang
|harbin|changsha|kunming|hong kong|hk|macau|taipei|kaohsiung|taichung|tokyo|osaka|kyoto|yokohama|nagoya|sapporo
|fukuoka|kobe|seoul|busan|incheon|pyongyang|ulaanbaatar|hanoi|ho chi minh city|saigon|da nang|bangkok|chiang mai
|phuket|kuala lumpur|penang|singapore|jakarta|bali|surabaya|manila|cebu|phnom penh|yangon|sydney|melbourne
|brisbane|perth|adelaide|canberra|hobart|darwin|gold coast|auckland|wellington|christchurch
"""
_REGIONS = """
alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|georgia|hawaii|idaho|illinois
|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|mississippi|missouri
|montana|nebraska|nevada|new hampshire|new jersey|new mexico|north carolina|north dakota|ohio|oklahoma|oregon
|pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|west virginia
|wisconsin|wyoming|ontario|quebec|british columbia|alberta|manitoba|nova scotia|bay area|silicon valley
|the bay area|new england|the midwest|england|scotland|wales|northern ireland|ireland|the uk|uk|britain
|great britain|the us|us|usa|the usa|america|the states|canada|mexico|brazil|argentina|chile|colombia|peru
|france|germany|spain|portugal|italy|greece|switzerland|austria|belgium|the netherlands|netherlands|holland
|denmark|sweden|norway|finland|iceland|poland|czechia|the czech republic|hungary|romania|bulgaria|serbia|croatia
|ukraine|russia|turkey|israel|egypt|morocco|nigeria|ghana|kenya|ethiopia|south africa|the uae|uae|qatar
|saudi arabia|india|pakistan|bangladesh|sri lanka|nepal|china|hong kong|taiwan|japan|korea|south korea|vietnam
|thailand|malaysia|singapore|indonesia|the philippines|philippines|australia|new zealand|europe|asia|africa
|latin america|south america|the middle east
"""
EN_PLACES = frozenset(p.strip() for p in (_CITIES + "|" + _REGIONS).replace("\n", "").split("|") if p.strip())
"""Cities, states, provinces, countries and regions by their English names, lower case."""


_PLACE_SHAPE = re.compile(
    r"(?:[A-Z][a-z]+\s+){0,2}(?:[A-Z][a-z]*(?:ville|ton|town|burg|burgh|boro|borough|ford|field|mouth|chester"
    r"|caster|ham|wick|minster|polis)"
    r"|(?!(?:Support|Transport|Sport|Passport|Airport|Report|Import|Export|Teleport)\b)[A-Z][a-z]*port"
    r"|(?:[A-Z][a-z]+\s+){1,2}(?:City|River|Springs|Falls|Beach|Hills|Heights|Valley|Lake|Bay|Harbor|Harbour"
    r"|Island|County|Creek|Grove|Rapids|Junction)"
    r"|(?:Overland|Oak|Highland|College|Forest|Menlo|Palisades|Hyde) Park)")
"""A name shaped like a town's (Springfield, Fall River, Johnstown), though not on the list."""


def is_en_place(value: str) -> bool:
    """Whether ``value`` is a place on the list ("Seattle", "new york", "the Bay Area"), any case, or a name shaped
    like a town's ("Fall River", "Springfield")."""
    return " ".join(value.casefold().split()) in EN_PLACES or _PLACE_SHAPE.fullmatch(value) is not None
