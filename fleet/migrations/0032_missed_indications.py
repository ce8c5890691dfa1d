"""A fine whose deadline to indicate its driver passed without one is "missed":
a new choice of `Fine.indication` (no change to the table), and the queue's partial index
widened to the missed fines (the queue shows them first, the tallies count them). The
new index is built before the old one goes, each without holding writers on PostgreSQL
(hence not atomic); no fine is missed before this migration, so nothing is rewritten."""

# Written by hand on 2026-12-07

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, AlterChoices, RemoveIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0031_cpf_disclosure_packet"),
    ]

    operations = [
        AlterChoices(
            model_name="fine",
            name="indication",
            field=models.CharField(
                blank=True,
                choices=[
                    ("needed", "to indicate"),
                    ("not_needed", "no indication needed"),
                    ("indicated", "indicated, awaiting the authority"),
                    ("accepted", "indication accepted"),
                    ("missed", "deadline missed: expect the NIC"),
                ],
                max_length=12,
                null=True,
                verbose_name="driver indication",
            ),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("indication__in", ["needed", "missed"]), ("treated", False)),
                fields=["indication_due", "id"],
                name="fleet_fine_still_to_indicate",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_to_indicate"),
    ]
