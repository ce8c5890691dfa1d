"""The portal's records, one module per concern; every model and choice is importable from
here (`from fleet.models import Fine`).

- `accounts`: fleet web-app logins and the audit trail of accessKey mints;
- `cnh`: driver licence lookups and the displays of full CPFs;
- `webhooks`: what the fleet platform pushes (deliveries, fines, notifications, unknown keys);
- `drivers`: the names of the fleet's drivers;
- `driving`: who had each vehicle when (the history), and who set a fine's driver by hand;
- `indications`: a fine as work with a deadline, and who changed its deadlines by hand;
- `saved_views`: a user's saved views of the fines list;
- `tallies`: the dashboard's running sums of fines;
- `crlv`: the vehicle each e-CRLV request was seen for;
- `groups`: vehicle groups, the part of the fleet each manager sees.
"""

from fleet.models.accounts import AccessKeyMint, FleetAccount, MintOutcome, MintPurpose
from fleet.models.cnh import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CnhLookupKind,
    CnhLookupStatus,
    CnhPurpose,
    CnhReason,
    CpfDisclosure,
    CpfDisclosurePlace,
)
from fleet.models.crlv import CrlvRequestVehicle
from fleet.models.drivers import Driver, DriverWord
from fleet.models.driving import (
    BASIS_MARKS,
    DriverBasis,
    DriverObservation,
    DriverSpan,
    FineDriverCorrection,
)
from fleet.models.groups import (
    WHOLE_FLEET_PERMISSION,
    DirectoryGroup,
    ScopeVersion,
    VehicleGroup,
    VehicleGroupMember,
    VehicleGroupPlate,
)
from fleet.models.indications import (
    MISSED,
    MISSED_LABEL,
    DeadlineBasis,
    DriverIndication,
    FineIndicationChange,
    Indication,
    IndicationChannel,
    IndicationField,
    IndicationOutcome,
    IndicationReceipt,
    NeedBasis,
    ReceiptType,
)
from fleet.models.saved_views import SavedFineView
from fleet.models.tallies import FineTally, GroupTally, TallyDimension
from fleet.models.webhooks import (
    BODY_PURGED_STATUSES,
    REPLAYABLE_STATUSES,
    DeliveryStatus,
    EventKind,
    Fine,
    Notification,
    UnknownWebhookKey,
    WebhookDelivery,
    WebhookRecord,
    Wording,
    of_vehicle,
)

__all__ = [
    "BASIS_MARKS",
    "BODY_PURGED_STATUSES",
    "MISSED",
    "MISSED_LABEL",
    "REPLAYABLE_STATUSES",
    "WHOLE_FLEET_PERMISSION",
    "AccessKeyMint",
    "CnhItemStatus",
    "CnhLookup",
    "CnhLookupItem",
    "CnhLookupKind",
    "CnhLookupStatus",
    "CnhPurpose",
    "CnhReason",
    "CpfDisclosure",
    "CpfDisclosurePlace",
    "CrlvRequestVehicle",
    "DeadlineBasis",
    "DeliveryStatus",
    "DirectoryGroup",
    "Driver",
    "DriverBasis",
    "DriverIndication",
    "DriverObservation",
    "DriverSpan",
    "DriverWord",
    "EventKind",
    "Fine",
    "FineDriverCorrection",
    "FineIndicationChange",
    "FineTally",
    "FleetAccount",
    "GroupTally",
    "Indication",
    "IndicationChannel",
    "IndicationField",
    "IndicationOutcome",
    "IndicationReceipt",
    "MintOutcome",
    "MintPurpose",
    "NeedBasis",
    "Notification",
    "ReceiptType",
    "SavedFineView",
    "ScopeVersion",
    "TallyDimension",
    "UnknownWebhookKey",
    "VehicleGroup",
    "VehicleGroupMember",
    "VehicleGroupPlate",
    "WebhookDelivery",
    "WebhookRecord",
    "Wording",
    "of_vehicle",
]
